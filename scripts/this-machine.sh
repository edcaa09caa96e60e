# Sourced by scripts/bench-flink and scripts/bench-nexmark (not run alone).
#
# this_machine describes the machine a benchmark runs on; a run keeps it in
# its .meta, since a report may be written later, on another host (the VMs
# these runs share differ by CPU: AMD EPYC and Intel Xeon hosts moved the
# memory-bound rows by up to a quarter).
this_machine() {
  printf '%s CPUs: %s; %s of memory; Linux %s' "$(nproc)" \
    "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || echo "?")" \
    "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || echo "?")" "$(uname -r)"
}
