// The virtual clock: events in time order, and in the order they were scheduled among events of
// the same time, so that a run is a pure function of its inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <queue>
#include <type_traits>
#include <utility>
#include <vector>

namespace herd::sim {

class event_queue {
public:
  /// What an event does: a callable whose captures fit `capacity` bytes, kept in place. A run
  /// schedules millions of events, and std::function allocated for every one that captured more
  /// than two pointers.
  class action {
  public:
    static constexpr std::size_t capacity = 64;

    action() = default;
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, action>>>
    action(F&& f) { // NOLINT(google-explicit-constructor): lambdas convert, as to std::function
      using stored = std::decay_t<F>;
      static_assert(sizeof(stored) <= capacity, "an event's captures must fit action::capacity");
      static_assert(alignof(stored) <= alignof(std::max_align_t), "over-aligned captures");
      static_assert(std::is_nothrow_move_constructible_v<stored>, "captures must move noexcept");
      new (storage_) stored(std::forward<F>(f));
      operations_ = &operations_of<stored>;
    }
    action(action&& other) noexcept { take(other); }
    action& operator=(action&& other) noexcept {
      if (this != &other) {
        reset();
        take(other);
      }
      return *this;
    }
    action(const action&) = delete;
    action& operator=(const action&) = delete;
    ~action() { reset(); }

    explicit operator bool() const { return operations_ != nullptr; }
    void operator()() { operations_->invoke(storage_); }

  private:
    struct operations {
      void (*invoke)(void* stored);
      void (*move_to)(void* from, void* to) noexcept; // and destroys `from`
      void (*destroy)(void* stored) noexcept;
    };
    template <class F>
    static constexpr operations operations_of{
        [](void* stored) { (*static_cast<F*>(stored))(); },
        [](void* from, void* to) noexcept {
          new (to) F(std::move(*static_cast<F*>(from)));
          static_cast<F*>(from)->~F();
        },
        [](void* stored) noexcept { static_cast<F*>(stored)->~F(); }};

    void take(action& other) noexcept {
      if (other.operations_ == nullptr)
        return;
      other.operations_->move_to(other.storage_, storage_);
      operations_ = std::exchange(other.operations_, nullptr);
    }
    void reset() noexcept {
      if (operations_ != nullptr)
        std::exchange(operations_, nullptr)->destroy(storage_);
    }

    alignas(std::max_align_t) unsigned char storage_[capacity];
    const operations* operations_ = nullptr;
  };

  /// Runs `what` at virtual time `time` (not before now()).
  void at(double time, action what);

  /// Runs the earliest event due at or before `until`; false when none is.
  bool run_next(double until);

  double now() const { return now_; }
  std::uint64_t events_run() const { return run_; }

private:
  // The heap holds times and places; the actions stay put in slots_ (reused once run), so that
  // ordering an event moves 24 bytes rather than its captures.
  struct event {
    double time = 0.0;
    std::uint64_t order = 0;
    std::size_t slot = 0;
  };
  struct later {
    bool operator()(const event& a, const event& b) const {
      return a.time != b.time ? a.time > b.time : a.order > b.order;
    }
  };

  std::priority_queue<event, std::vector<event>, later> queue_;
  std::vector<action> slots_;
  std::vector<std::size_t> free_slots_;
  double now_ = 0.0;
  std::uint64_t scheduled_ = 0;
  std::uint64_t run_ = 0;
};

} // namespace herd::sim
