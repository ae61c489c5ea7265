# tests/jobs.sh: run commands JOBS at a time, each into its own result file, numbered in the
# order they were queued, so that reading the files back in order gives an output that does
# not depend on JOBS.  Sourced by tests/run_plans.sh and tests/gen_matrix.sh.
#
# JOBS: default the machine's processors, at most 4 (each command is one check process).
jobs_max=${JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs_max" -ge 1 ] 2>/dev/null || jobs_max=1
[ "$jobs_max" -gt 4 ] && jobs_max=4
jobs_n=0

# jobs_queue DIR CMD ARGS...: once fewer than jobs_max run, run CMD ARGS in the background with
# its output (stdout and stderr) in DIR/NNNNN, NNNNN the queue's count
jobs_queue() {
    local dir=$1
    shift
    jobs_n=$((jobs_n + 1))
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
    "$@" >"$dir/$(printf '%05d' "$jobs_n")" 2>&1 &
}
