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
