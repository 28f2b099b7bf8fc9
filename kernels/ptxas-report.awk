# Condenses `ptxas -v` output into one line per kernel and architecture:
# registers, spill stores/loads (bytes), stack frame (bytes), static shared memory (bytes).
/Compiling entry function/ { split($0, q, "'"); name = q[2]; arch = q[4]; next }
/bytes stack frame/ { stack = $1; spill_st = $5; spill_ld = $9; next }
/Used [0-9]+ registers/ {
    regs = $5; smem = 0
    if (match($0, /[0-9]+ bytes smem/)) { smem = substr($0, RSTART, RLENGTH); sub(/ bytes smem/, "", smem) }
    printf "%-40s %-7s %3d regs  spill %4d/%-4d  stack %4d  smem %6d\n", name, arch, regs, spill_st, spill_ld, stack, smem
    kernels++; if (spill_st + spill_ld > 0) spilled++
}
END { printf "ptxas: %d kernel builds, %d with spills\n", kernels, spilled + 0 }
