// How `herd train` presents a run: the human summary on stdout and the JSON report (--report).
#pragma once

#include "herd/config.hpp"
#include "herd/run_config.hpp"
#include "herd/run_summary.hpp"

#include <cstddef>
#include <ostream>
#include <string>

namespace herd::cli {

/// `value` with `digits` digits after the point ("0.8684"), as every table and line of Herd's
/// prints numbers.
std::string fixed(double value, int digits);

/// The widest line of the summary: it fits an 80-column terminal.
constexpr std::size_t summary_columns = 79;

/// `text` broken between words into lines of at most `width` characters, each line after the
/// first preceded by `indent` spaces (not counted in `width`); a number keeps its unit ("8.71 s"),
/// and a '\n' in the text breaks as well. A word longer than `width` stays whole.
std::string wrap_words(const std::string& text, std::size_t width, std::size_t indent);

/// The run summary as a few aligned lines and a per-worker table, none wider than
/// summary_columns: a long value goes on under its label.
void print_summary(std::ostream& out, const actors::run_summary& summary);

/// The JSON report (docs/report.md lists the fields).
/// `scope`: the keys of the command that ran it (command_keys.hpp), so that the report's config
/// reads back into that command without notes on keys it does not use; empty: every key.
std::string report_json(const actors::run_summary& summary, const config::run_config& config,
                        const config::key_scope& scope = {});

/// Writes `text` to `path` through a temporary file and a rename, so a reader never sees half a
/// report: the temporary is a new file of this call's own beside `path` (mkstemp), flushed to
/// the disk before the rename, so two writers of one path each leave a whole file there (the
/// last rename wins). Throws std::runtime_error naming the path when it cannot; no temporary file
/// is left behind then.
void write_file_atomically(const std::string& path, const std::string& text);

/// Whether two names are of one file: by device and inode when both exist (hard and symbolic
/// links, "./a" and "a"), else by their canonical paths.
bool same_file(const std::string& first, const std::string& second);

/// Throws std::runtime_error "<path>: <why>" when write_file_atomically(path, ...) could not
/// work: `path` is a directory or another file that is not a regular one (a device, a pipe), or
/// its directory is missing or takes no new file (tried: a temporary file is created there and
/// removed, the one test that also holds for root, read-only mounts and /proc).
void check_writable(const std::string& path);

/// Writes `script` to DIR/plot.gp and runs gnuplot on it in DIR (output in DIR/gnuplot.log).
/// False, after saying why on stdout, when gnuplot is not installed or fails: the script and its
/// data stay, ready to plot. For the commands that plot their results (bench, simulate).
bool run_gnuplot(const std::string& dir, const std::string& script);

/// The gnuplot line colour (`lc rgb '#rrggbb'`) of the index-th series of a plot: ten colours
/// that are distinct and dark enough on white (gnuplot's own fifth is a pale yellow). Every plot
/// of one command gives an algorithm its place in the command's list, so it keeps its colour
/// from plot to plot.
std::string plot_colour(std::size_t index);

} // namespace herd::cli
