//! After analysis, evsparse calls allocate nothing and never synchronize the host: a timestep
//! loop (event compaction, spike propagation = spmv T on events and on the compacted spike
//! list, a trace-driven spmv N over
//! hub neurons (length_classes, with its long-row pass), plasticity pre and post) is
//! captured on the caller's CUDA stream into a graph (global capture mode, so any allocation
//! or host synchronization inside would fail the capture), replayed, and compared with the CPU
//! backend running the same steps. Needs EVS_TEST_DEVICE=cuda; elsewhere it reports a skip.

mod common;

use common::{encode, read, upload, Rng};
use cudarc::driver::sys::{self, CUresult};
use evsparse::core::context::{Context, Stream, EVS_DEVICE_CPU, EVS_DEVICE_CUDA};
use evsparse::core::csr::{Csr, CsrShape, Weights};
use evsparse::core::dense::Dense;
use evsparse::core::spikes::{SpikeList, Spikes};
use evsparse::core::{ops, InputKind, Op};
use evsparse::dtype::DType;
use std::sync::Arc;

/// Captures are global (CU_STREAM_CAPTURE_MODE_GLOBAL): the tests take turns, even where the
/// harness runs them on several threads (the sanitizers' runs).
static ONE_CAPTURE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn ok(r: CUresult, what: &str) {
    assert_eq!(r, CUresult::CUDA_SUCCESS, "{what}");
}

/// A stream the caller owns, in device 0's primary context (the one evsparse uses).
fn caller_stream() -> sys::CUstream {
    unsafe {
        ok(sys::cuInit(0), "cuInit");
        let (mut dev, mut ctx, mut stream) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        ok(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet");
        ok(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), "retain");
        ok(sys::cuCtxSetCurrent(ctx), "set current");
        ok(sys::cuStreamCreate(&mut stream, 1), "stream");
        stream
    }
}

/// What both tests start from: this test's turn, a GPU context on the caller's stream and a CPU
/// context to compare with. None (a skip) without EVS_TEST_DEVICE=cuda.
struct Setup {
    _turn: std::sync::MutexGuard<'static, ()>,
    rng: Rng,
    gpu: Arc<Context>,
    cpu: Arc<Context>,
    raw: sys::CUstream,
    gs: Stream,
    cs: Stream,
}

fn setup() -> Option<Setup> {
    if std::env::var("EVS_TEST_DEVICE").as_deref() != Ok("cuda") {
        println!("skipped: set EVS_TEST_DEVICE=cuda on a machine with a GPU");
        return None;
    }
    let _turn = ONE_CAPTURE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let gpu = Context::new(EVS_DEVICE_CUDA, 0).unwrap();
    let cpu = Context::new(EVS_DEVICE_CPU, 0).unwrap();
    let raw = caller_stream();
    let (gs, cs) = (Stream::wrap(&gpu, raw as *mut _).unwrap(), Stream::new(&cpu).unwrap());
    Some(Setup { _turn, rng: Rng::new(), gpu, cpu, raw, gs, cs })
}

/// The network state of one backend.
struct Net {
    a: Csr,
    spikes: Dense,
    current: Dense,
    /// The same propagation from the compacted spike list (f32).
    list_current: Dense,
    drive: Dense,
    pre_trace: Dense,
    post_trace: Dense,
    active: Dense,
    count: Dense,
}

fn weights_of(net: &Net) -> &Dense {
    match &net.a.weights {
        Weights::Hetero(w) => w,
        Weights::Homo(_) => unreachable!(),
    }
}

/// One simulation step: compact the spikes, propagate them (from the event vector, and from
/// the compacted list for f32), apply both plasticity rules (pre also from the list).
fn step(s: &Stream, net: &Net) {
    ops::compact(s, &net.spikes, &net.active, &net.count).unwrap();
    ops::spmm(s, Op::T, InputKind::Events, 1.0, &net.a, &net.spikes, 1.0, &net.current, true).unwrap();
    let list = SpikeList { indices: &net.active, count: &net.count };
    if net.a.dtype == DType::F32 {
        // beta = 0: the scaling and the scatter that loads while it runs, replayed
        ops::spmv_spikes(s, Op::T, 1.0, &net.a, list, 0.0, &net.list_current).unwrap();
    }
    ops::csr_plasticity(s, false, &net.a, Spikes::List(list), &net.post_trace, -1.0, 1.0).unwrap();
    ops::spmm(s, Op::N, InputKind::Float, 1.0, &net.a, &net.post_trace, 0.5, &net.drive, true).unwrap();
    ops::csr_plasticity(s, false, &net.a, Spikes::Events(&net.spikes), &net.post_trace, -1.0, 1.0).unwrap();
    ops::csr_plasticity(s, true, &net.a, Spikes::Events(&net.spikes), &net.pre_trace, -1.0, 1.0).unwrap();
}

#[test]
fn timestep_loop_replays_from_a_cuda_graph() {
    let Some(Setup { _turn, mut rng, gpu, cpu, raw, gs, cs }) = setup() else { return };
    for t in [DType::F32, DType::F16] {
        let n = 3000 + rng.below(2000);
        let mut indptr = vec![0i64];
        let mut indices = vec![];
        for i in 0..n {
            // a few hub neurons, so that spmv N runs length_classes with long rows
            let synapses = if i % 1000 == 17 { 400 + rng.below(400) } else { rng.below(40) };
            for _ in 0..synapses {
                indices.push(rng.below(n) as i32);
            }
            indptr.push(indices.len() as i64);
        }
        let weights: Vec<f64> = (0..indices.len()).map(|_| rng.unit() * 0.5).collect();
        let spikes: Vec<f64> = (0..n).map(|_| (rng.below(100) < 5) as u8 as f64).collect();
        let trace = |rng: &mut Rng| (0..n).map(|_| rng.unit() * 0.01).collect::<Vec<f64>>();
        let (pre, post) = (trace(&mut rng), trace(&mut rng));
        let build = |ctx: &Arc<Context>, s: &Stream| {
            let w_bytes = encode(t, &weights);
            let shape = CsrShape::new(n as i64, n as i64, indices.len() as i64, DType::I64, t).unwrap();
            let a = unsafe {
                Csr::from_host(ctx, shape, indptr.as_ptr() as *const u8, indices.as_ptr(), Some(w_bytes.as_ptr()), 0.0)
            }
            .unwrap();
            ops::analyse(s, &a).unwrap();
            Net {
                a,
                spikes: upload(ctx, s, DType::Bool, (1, n, 1), &spikes),
                current: upload(ctx, s, t, (1, n, 1), &vec![0.0; n]),
                list_current: upload(ctx, s, t, (1, n, 1), &vec![0.0; n]),
                drive: upload(ctx, s, t, (1, n, 1), &vec![0.25; n]),
                pre_trace: upload(ctx, s, t, (1, n, 1), &pre),
                post_trace: upload(ctx, s, t, (1, n, 1), &post),
                active: Dense::create(ctx, DType::I32, 1, n as i64, 1).unwrap(),
                count: Dense::create(ctx, DType::I32, 1, 1, 1).unwrap(),
            }
        };
        let (gnet, cnet) = (build(&gpu, &gs), build(&cpu, &cs));

        let (mut graph, mut exec) = (std::ptr::null_mut(), std::ptr::null_mut());
        unsafe {
            ok(sys::cuStreamBeginCapture_v2(raw, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL), "begin");
            step(&gs, &gnet);
            ok(sys::cuStreamEndCapture(raw, &mut graph), "end capture (an allocation or sync inside breaks it)");
            ok(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), "instantiate");
        }
        let replays = 5;
        for _ in 0..replays {
            unsafe { ok(sys::cuGraphLaunch(exec, raw), "launch") };
            step(&cs, &cnet);
        }
        gs.synchronize().unwrap();
        let tol = if t == DType::F32 { 1e-4 } else { 2e-2 };
        for (what, g, c) in [
            ("current", &gnet.current, &cnet.current),
            ("list current", &gnet.list_current, &cnet.list_current),
            ("drive", &gnet.drive, &cnet.drive),
            ("weights", weights_of(&gnet), weights_of(&cnet)),
            ("count", &gnet.count, &cnet.count),
        ] {
            let (got, want) = (read(&gs, g), read(&cs, c));
            for (i, (x, y)) in got.iter().zip(&want).enumerate() {
                assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}[{i}] ({}): graph {x}, CPU {y}", t.name());
            }
        }
        let count = read(&cs, &cnet.count)[0] as usize;
        assert_eq!(read(&gs, &gnet.active)[..count], read(&cs, &cnet.active)[..count], "active indices");
        assert!(count > 0, "the test network must spike");
        unsafe {
            sys::cuGraphExecDestroy(exec);
            sys::cuGraphDestroy(graph);
        }
        println!("{}: {replays} graph replays of a {n}-neuron step match the CPU", t.name());
        // the chooser picked length_classes for the hub rows (unless EVS_FORCE_ALGORITHM says otherwise)
        ops::spmm(&gs, Op::N, InputKind::Float, 1.0, &gnet.a, &gnet.post_trace, 0.5, &gnet.drive, true).unwrap();
        if std::env::var_os("EVS_FORCE_ALGORITHM").is_none() {
            assert_eq!(evsparse::core::plan::plan_name(evsparse::core::plan::last()), "spmm_n:length_classes");
        }
        // the caller's stream is non-blocking: finish its work before the network is freed
        gs.synchronize().unwrap();
    }
}

/// A T product captured while the weights' CSC-ordered copy is fresh, replayed after a weights
/// view wrote them (a fill through it): the replay must read the new weights, for each T
/// kernel that reads the copy (the gather, the lists, the events' bits).
#[test]
fn t_product_replayed_after_a_weights_view_reads_the_new_weights() {
    let Some(Setup { _turn, mut rng, gpu, cpu, raw, gs, cs }) = setup() else { return };
    let (m, k, per_row) = (3000, 2000, 40);
    let indptr: Vec<i64> = (0..=m).map(|i| (i * per_row) as i64).collect();
    let indices: Vec<i32> = (0..m * per_row).map(|_| rng.below(k) as i32).collect();
    let weights: Vec<f64> = (0..indices.len()).map(|_| rng.unit()).collect();
    for (alg, kind, n) in [
        ("csc_gather", InputKind::Float, 1),
        ("nonzero_lists", InputKind::Float, 96),
        ("event_bits", InputKind::Events, 64),
    ] {
        let xt = if kind == InputKind::Float { DType::F32 } else { DType::Bool };
        let x: Vec<f64> = (0..m * n).map(|_| if rng.below(10) == 0 { rng.unit() + 0.5 } else { 0.0 }).collect();
        let ndim = if n == 1 { 1 } else { 2 };
        let run = |ctx: &Arc<Context>, s: &Stream, capture: bool| {
            let w_bytes = encode(DType::F32, &weights);
            let shape = CsrShape::new(m as i64, k as i64, indices.len() as i64, DType::I64, DType::F32).unwrap();
            let a = unsafe {
                Csr::from_host(ctx, shape, indptr.as_ptr() as *const u8, indices.as_ptr(), Some(w_bytes.as_ptr()), 0.0)
            }
            .unwrap();
            ops::analyse(s, &a).unwrap();
            if capture {
                ctx.forced.apply(&format!("spmm_t:{alg}")).unwrap(); // GPU algorithms; the CPU runs its own
            }
            let (x, y) =
                (upload(ctx, s, xt, (ndim, m, n), &x), upload(ctx, s, DType::F32, (ndim, k, n), &vec![0.0; k * n]));
            let product = || ops::spmm(s, Op::T, kind, 1.0, &a, &x, 0.0, &y, n == 1).unwrap();
            let mut outputs = vec![];
            product(); // outside the capture: the stream's scratch is allocated on first use
            let (mut graph, mut exec) = (std::ptr::null_mut(), std::ptr::null_mut());
            if capture {
                unsafe {
                    ok(
                        sys::cuStreamBeginCapture_v2(raw, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL),
                        "begin",
                    );
                    product();
                    ok(sys::cuStreamEndCapture(raw, &mut graph), "end capture");
                    ok(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), "instantiate");
                }
            }
            let replay = || match capture {
                true => unsafe { ok(sys::cuGraphLaunch(exec, raw), "launch") },
                false => product(),
            };
            replay();
            outputs.push(read(s, &y));
            a.weights_view().unwrap().fill(s, 0.375).unwrap();
            replay();
            outputs.push(read(s, &y));
            ctx.forced.apply("spmm_t:auto").unwrap();
            if capture {
                unsafe {
                    sys::cuGraphExecDestroy(exec);
                    sys::cuGraphDestroy(graph);
                }
            }
            s.synchronize().unwrap();
            outputs
        };
        let (got, want) = (run(&gpu, &gs, true), run(&cpu, &cs, false));
        for (when, (g, c)) in ["before the view", "after a fill through it"].iter().zip(got.iter().zip(&want)) {
            for (i, (x, y)) in g.iter().zip(c).enumerate() {
                assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{alg} {when}: y[{i}] graph {x}, CPU {y}");
            }
        }
        println!("{alg}: a replay after a weights view matches the CPU");
    }
}
