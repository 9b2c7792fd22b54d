#!/usr/bin/env bash
# examples/job_service against an installed Herd, as a user meets it: build it with the installed
# package, start it, run two jobs at once with curl, stop one, and check that the other completes,
# that a bad configuration answers 400 with the message herd train prints, that /metrics
# names both jobs, and that finished jobs beyond --keep-finished are forgotten.
#   job_service_test.sh PREFIX SOURCE_DIR WORK_DIR [SANITIZER_FLAGS]
set -euo pipefail
prefix=$1
source_dir=$2
work=$3
sanitizer_flags=${4:-}

fail() {
  echo "job_service_test: $*" >&2
  [[ -f "$work/service.log" ]] && { echo "--- service output:" >&2; cat "$work/service.log" >&2; }
  exit 1
}

rm -rf "$work"
mkdir -p "$work"
cmake -S "$source_dir" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$sanitizer_flags" -DCMAKE_EXE_LINKER_FLAGS="$sanitizer_flags" \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure failed"; }
cmake --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build failed"; }

# A bad flag value is refused by name before anything starts.
if "$work/build/job_service" --keep-finished -1 > "$work/bad-flag.log" 2>&1; then
  fail "--keep-finished -1 was accepted"
fi
grep -q -- "--keep-finished -1: not a whole number from 0" "$work/bad-flag.log" ||
  fail "--keep-finished -1: $(cat "$work/bad-flag.log")"

"$work/build/job_service" --port 0 --keep-finished 2 > "$work/service.log" 2>&1 &
service=$!
trap 'kill -9 $service 2>/dev/null || true' EXIT
url=""
for _ in $(seq 100); do
  url=$(sed -n 's/^job_service: listening on \(http:[^ ]*\)$/\1/p' "$work/service.log")
  [[ -n "$url" ]] && break
  kill -0 $service 2>/dev/null || fail "the service exited before listening"
  sleep 0.1
done
[[ -n "$url" ]] || fail "the service did not say where it listens"

# request METHOD PATH [BODY]: prints the body, then the status on a line of its own.
request() {
  local data=()
  [[ $# -ge 3 ]] && data=(--data-binary "$3")
  curl -sS -X "$1" --max-time 30 -w '\n%{http_code}' "${data[@]}" "$url$2"
}
status_of() { tail -n 1 <<< "$1"; }
body_of() { sed '$d' <<< "$1"; }
field() { # field JSON KEY: a top-level string or number of a JSON object (no nesting needed)
  sed -n "s/.*\"$2\":\(\"[^\"]*\"\|[-0-9.e]*\|null\).*/\1/p" <<< "$1" | tr -d '"'
}

# A bad configuration: 400 with herd train's own message, naming the key and the value.
bad=$(request POST /jobs $'[train]\nworkers = 0\n')
[[ $(status_of "$bad") == 400 ]] || fail "a bad configuration answered $(status_of "$bad"): $bad"
grep -q "train.workers = 0" <<< "$(body_of "$bad")" || fail "400 without the key and value: $bad"

# Two jobs at once on synthetic data: a long one (to be stopped) and a short one.
job() {
  printf '[data]\ndataset = "synthetic"\n[model]\nhidden = [32]\n[train]\nworkers = 2\n'
  printf 'algorithm = "%s"\nepochs = %s\neval-every = 20\n' "$1" "$2"
}
long=$(request POST /jobs "$(job solo 100000)") # runs until it is stopped below
[[ $(status_of "$long") == 201 ]] || fail "the first job was refused: $long"
short=$(request POST /jobs "$(job sync 100)") # a few seconds: long enough to be seen running
[[ $(status_of "$short") == 201 ]] || fail "the second job was refused: $short"
long_id=$(field "$(body_of "$long")" id)
short_id=$(field "$(body_of "$short")" id)

# Both report metrics under their own job label while they run (a job's series leave /metrics
# when it ends; each job counts once it has been seen).
seen_long=no seen_short=no
for _ in $(seq 300); do
  metrics=$(curl -sS --max-time 10 "$url/metrics")
  grep -q "job=\"job-$long_id\"" <<< "$metrics" && seen_long=yes
  grep -q "job=\"job-$short_id\"" <<< "$metrics" && seen_short=yes
  [[ $seen_long == yes && $seen_short == yes ]] && break
  sleep 0.1
done
[[ $seen_long == yes ]] || fail "/metrics never named job-$long_id"
[[ $seen_short == yes ]] || fail "/metrics never named job-$short_id"

listed=$(request GET /jobs)
[[ $(status_of "$listed") == 200 ]] || fail "GET /jobs: $listed"
grep -q "\"name\":\"job-$long_id\"" <<< "$listed" || fail "GET /jobs lacks job-$long_id: $listed"

stopped=$(request DELETE "/jobs/$long_id")
[[ $(status_of "$stopped") == 202 ]] || fail "DELETE answered $(status_of "$stopped"): $stopped"
[[ $(status_of "$(request DELETE /jobs/999)") == 404 ]] || fail "DELETE of an unknown job was not 404"
# An id beyond any int is no job too (it was a 500: the parse threw).
beyond=$(request GET /jobs/99999999999999)
[[ $(status_of "$beyond") == 404 ]] || fail "GET of an id beyond any job was not 404: $beyond"
grep -q '"no job 99999999999999"' <<< "$beyond" || fail "GET of an id beyond any job: $beyond"

# wait_for ID: polls until the job has ended; prints its last status.
wait_for() {
  local shown
  for _ in $(seq 600); do
    shown=$(request GET "/jobs/$1")
    case $(field "$(body_of "$shown")" state) in
      finished|failed) body_of "$shown"; return 0 ;;
    esac
    sleep 0.2
  done
  fail "job $1 did not end: $shown"
}
long_end=$(wait_for "$long_id")
short_end=$(wait_for "$short_id")
[[ $(field "$long_end" state) == finished ]] || fail "the stopped job: $long_end"
[[ $(field "$long_end" stop_reason) == interrupted ]] || fail "the stopped job was not interrupted: $long_end"
[[ $(field "$short_end" state) == finished ]] || fail "the other job: $short_end"
[[ $(field "$short_end" stop_reason) == epochs ]] || fail "the other job did not run its epochs: $short_end"
accuracy=$(field "$short_end" final_test_accuracy)
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.5) }' || fail "the other job learnt nothing: $short_end"

# A third job to finish: the service keeps the 2 latest finished, so the one of the first two that
# finished first is forgotten (404), the other and the third are still listed.
third=$(request POST /jobs "$(job sync 2)")
[[ $(status_of "$third") == 201 ]] || fail "the third job was refused: $third"
third_id=$(field "$(body_of "$third")" id)
wait_for "$third_id" > /dev/null
listed=$(body_of "$(request GET /jobs)")
[[ $(grep -o '"id":' <<< "$listed" | wc -l) == 2 ]] || fail "not 2 finished jobs kept: $listed"
grep -q "\"name\":\"job-$third_id\"" <<< "$listed" || fail "the third job is not listed: $listed"
forgotten=0
for id in "$long_id" "$short_id"; do
  shown=$(request GET "/jobs/$id")
  if [[ $(status_of "$shown") == 404 ]]; then
    grep -q "keeps its 2 latest finished jobs" <<< "$shown" || fail "a forgotten job's 404: $shown"
    forgotten=$((forgotten + 1))
  fi
done
[[ $forgotten == 1 ]] || fail "$forgotten of the first two jobs forgotten, not 1: $listed"

kill -TERM $service
wait $service || fail "the service exited $? on SIGTERM"
trap - EXIT
grep -q "job_service: stopping" "$work/service.log" || fail "no orderly stop"
echo "job_service_test: two jobs, one stopped (interrupted), the other finished at accuracy $accuracy"
rm -rf "$work"
