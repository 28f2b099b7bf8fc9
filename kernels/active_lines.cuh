// Event-driven work over the active lines of a matrix: the CSR rows (CsrWalk) or CSC columns
// (CscWalk) whose input is live. Only their entries are touched. A warp takes 32 candidate
// lines at a time (one coalesced load of their inputs), a ballot lists the live ones, and all
// 32 lanes walk each live line in turn, ENTRIES_AT_ONCE entries per lane in flight. The grid's
// warps stride over the candidates, so a silent neuron costs a byte of a coalesced load. Used
// by spike propagation (sparse.cu, `scatter`); its output is scaled by beta by a launch before
// (src/cuda/ops.rs). warp_per_line, below, walks the same lines a warp each (spike lists,
// long rows, CSR plasticity). bench/probe_events.cu measures these shapes against others
// (bench/NOTES.md, "Active lines").
#pragma once

#include "common.cuh"

#define LINES_THREADS 256
// 4 entries a lane in flight cover 128 a pass, where the plan scatters rows of a mean under
// 512 (src/core/plan.rs; longer ones take a warp each), and leave the registers for 8 blocks an
// SM with f32 outputs: 32 registers, no spills, since an entry's target is a 32-bit index (f64
// at 5 blocks, 40 registers). More warps resident keep more chains of event, extents and entries
// loads going: spmv T on 400,000 events (0.5 %, H200 graph µs) 7.1 at 5 blocks -> 5.8 at 6 ->
// 5.6 at 8 (bench/NOTES.md, "spmv T events 400,000: six blocks an SM", "eight blocks").
#define ENTRIES_AT_ONCE 4
#define LINES_BLOCKS_PER_SM(T) (sizeof(T) == 8 ? 5 : 8)

// Candidates are the entries of x (a.lines of them, ldx apart): live where the input is non-zero
// (an active event counts as 1).
template <class In> struct InputLines {
    __device__ static int64_t candidates(const Args& a) { return a.lines; }
    template <class A> __device__ static bool live(const Args& a, int64_t item, int64_t& line, A& v) {
        line = item;
        v = value<A>(((const In*)a.x)[item * a.ldx], a.events);
        return v != A(0);
    }
};

// An event vector in one launch, listed nowhere (each_part_entries): warp task t is group t / parts
// of 32 candidate lines and part t % parts of each live one. A lane tests its own line (one
// coalesced load a group) and takes its part's bounds, read with the input; a warp scan of the
// parts' lengths lays the task's entries end to end, and the lanes take PART_AT_ONCE of them each
// at a time (a shuffle search names each one's line): batch(p, src, v) gets their positions (-1:
// none), the lanes whose lines they are, and this lane's line's input value (to shuffle from src
// where the batch needs the values). No barrier: where each block listed the vector first, its
// warps waited ~2 µs on that listing (CSR pre 5,000² x 500, 10 % live: bench/NOTES.md, "Plasticity
// by line parts"). A part is about PART_ENTRIES entries of a mean line, parts a power of two
// (shifts, not divisions) at most about the grid's warps over the groups (src/cuda/ops.rs,
// line_parts_grid, sizes the grid a warp a task). The host runs it on up to 2^31 - 1 entries, so
// positions are ints. CSR plasticity's line_parts (plasticity.cu) is the same walk written out:
// called from csr_post_even, this form made ptxas spill in its rows walk (16 % more instructions
// executed, post 5,000² 10 % 6.7 -> 7.3 graph µs: bench/NOTES.md, "N on events by line parts").
#define PART_ENTRIES 16
#define PART_AT_ONCE 2
template <class In, class Walk, class A, class Batch> __device__ void each_part_entries(const Args& a, Batch batch) {
    const int lines = (int)Walk::count(a), groups = (lines + 31) / 32, lane = lane_id(), warps = (int)warps_in_grid();
    // the ideal part count in float arithmetic: a 64-bit division in every thread cost as many
    // instructions as the walk itself (ncu: 1.79 M against the probe's 0.98 M)
    const float mean_line = __fdividef((float)a.nnz, (float)max(lines, 1));
    const int ideal = max(1, min((int)__fdividef((float)warps, (float)max(groups, 1)), (int)(mean_line / PART_ENTRIES)));
    const int shift = 31 - __clz(ideal + ideal / 2), parts = 1 << shift;
    for (int task = (int)warp_id(); task < groups << shift; task += warps) {
        const int line = (task >> shift) * 32 + lane, part = task & (parts - 1);
        int first = 0, n = 0, b = 0, len = 0;
        int64_t unused;
        A v;
        if (line < lines) b = (int)Walk::begin(a, line), len = (int)Walk::end(a, line) - b;  // with the input: a trip less
        if (line < lines && InputLines<In>::live(a, line, unused, v)) {
            const int chunk = (len + parts - 1) >> shift, skip = min(len, part * chunk);
            first = b + skip;
            n = min(chunk, len - skip);
        }
        const int end = warp_inclusive_sum(n, lane), total = __shfl_sync(0xffffffffu, end, 31);
        for (int base = 0; base < total; base += 32 * PART_AT_ONCE) {
            int p[PART_AT_ONCE], src[PART_AT_ONCE];
#pragma unroll
            for (int u = 0; u < PART_AT_ONCE; u++) {
                const int idx = base + 32 * u + lane;
                int at = 0;  // the first lane whose parts end past idx
#pragma unroll
                for (int step = 16; step; step >>= 1)
                    if (__shfl_sync(0xffffffffu, end, at + step - 1) <= idx) at += step;
                const int start = __shfl_sync(0xffffffffu, end - n, at), at0 = __shfl_sync(0xffffffffu, first, at);
                p[u] = idx < total ? at0 + idx - start : -1;
                src[u] = at;
            }
            batch(p, src, v);
        }
    }
}

// Every entry p of line [begin, end): Work::load for ENTRIES_AT_ONCE entries per lane, then
// Work::apply with the line's input value v, so that the loads are in flight together.
template <class Work>
__device__ __forceinline__ void walk_line(const Args& a, Work& work, int64_t begin, int64_t end, typename Work::Acc v) {
    for (int64_t p0 = begin + lane_id(); p0 < end; p0 += 32 * ENTRIES_AT_ONCE) {
        typename Work::Entry e[ENTRIES_AT_ONCE];
#pragma unroll
        for (int u = 0; u < ENTRIES_AT_ONCE; u++)
            if (p0 + 32 * u < end) e[u] = work.load(a, p0 + 32 * u);
#pragma unroll
        for (int u = 0; u < ENTRIES_AT_ONCE; u++)
            if (p0 + 32 * u < end) work.apply(a, e[u], v);
    }
}

// Launched right after the scaling in its call (scale_opener), Work waits for it before its first
// add (AddInto's AFTER_OPENER), so a warp loads its first candidates' inputs and extents and its
// first line's first entries while y is scaled.
template <class Source, class Walk, class Work> __device__ void active_lines(const Args& a) {
    typedef typename Work::Acc A;
    Work work;
    const int lane = lane_id();
    const int64_t warps = (int64_t)gridDim.x * (LINES_THREADS / 32);
    for (int64_t base = warp_id() * 32; base < Source::candidates(a); base += warps * 32) {
        const int64_t item = base + lane;
        int64_t line = 0, begin = 0, end = 0;
        A v = 0;
        const bool live = item < Source::candidates(a) && Source::live(a, item, line, v);
        if (live) begin = Walk::begin(a, line), end = Walk::end(a, line);
        for (unsigned ballot = __ballot_sync(0xffffffffu, live); ballot; ballot &= ballot - 1) {
            const int src = __ffs(ballot) - 1;
            const int64_t b = __shfl_sync(0xffffffffu, begin, src), e = __shfl_sync(0xffffffffu, end, src);
            walk_line(a, work, b, e, __shfl_sync(0xffffffffu, v, src));
        }
    }
}

// A warp per live line: per candidate line of an input vector (a silent line exits after one
// load) or per listed line of a spike list, with the grid's warps shared among the listed
// lines (common.cuh, Inputs::each_line); lanes stride over the line's entries. More live lines
// are in flight than in active_lines, which long rows and spike lists need (a list has no
// silent lines to skip, so a warp taking 32 of them walks them in series: 3-8x slower). Loads
// are not batched as in walk_line: that measured 5-20% slower here (bench/NOTES.md, "Spike
// lists").
template <class In, class Walk, class Work> __device__ void warp_per_line(const Args& a) {
    typedef typename Work::Acc A;
    Work work;
    Inputs<In>::template each_line<A>(a, Walk::count(a), [&](int64_t line, A v, int64_t part, int64_t parts) {
        line_entries(Walk::begin(a, line), Walk::end(a, line), part, parts, [&](int64_t p) { work.apply(a, work.load(a, p), v); });
    });
}
