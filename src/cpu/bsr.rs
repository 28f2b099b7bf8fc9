//! Block-sparse × dense products.

use super::{gemm_update, packed, worth_sharing, Blend};
use crate::core::bsr::Bsr;
use crate::core::context::Stream;
use crate::core::dense::Dense;
use crate::core::plan::{self, decide, Backend, Bsrmm};
use crate::dtype::{with_float, Acc, DType, Float};
use crate::error::{Error, Result};
use rayon::prelude::*;

/// bsrmm on a CPU context, with the algorithm the plan picks.
pub fn bsrmm(st: &Stream, alpha: f64, a: &Bsr, b: &Dense, beta: f64, c: &Dense) -> Result<()> {
    let all_f32 = a.values.dtype == DType::F32 && c.dtype == DType::F32;
    let fits = |alg| alg != Bsrmm::BlockGemm || all_f32;
    match decide(&st.ctx.forced, Backend::Cpu, plan::choose_bsrmm_cpu(all_f32), fits)? {
        Bsrmm::BlockGemm => bsrmm_gemm(st, alpha, a, b, beta, c),
        _ => st.ctx.run(|| bsrmm_reference(alpha, a, b, beta, c)),
    }
}

/// `C = alpha · A · B + beta · C`, accumulating in f32, one block row per task.
pub fn bsrmm_reference(alpha: f64, a: &Bsr, b: &Dense, beta: f64, c: &Dense) -> Result<()> {
    with_float!(a.values.dtype, T => match c.dtype {
        DType::F16 => bsrmm_typed::<T, half::f16>(alpha, a, b, beta, c),
        DType::BF16 => bsrmm_typed::<T, half::bf16>(alpha, a, b, beta, c),
        DType::F32 => bsrmm_typed::<T, f32>(alpha, a, b, beta, c),
        other => Err(Error::internal(format!("bsrmm: no kernel for output {}", other.name()))),
    })
}

fn bsrmm_typed<T: Float, TC: Float<Acc = f32>>(alpha: f64, a: &Bsr, b: &Dense, beta: f64, c: &Dense) -> Result<()> {
    let (bm, bk, n) = (a.bm, a.bk, c.cols);
    let bs = packed::<T, f32>(b, |v| v.to_acc().widen() as f32);
    let blend = Blend::<f32>::new(alpha, beta);
    // SAFETY: T is the values' dtype, TC c's dtype (checked by the op); host memory.
    let (view, values, out) = unsafe { (a.view(), a.values.slice::<T>(), c.slice_mut::<TC>()) };
    let block_rows = out.par_chunks_mut((c.ld * bm).max(1)).take(a.mb);
    block_rows.enumerate().for_each(|(ib, rows)| {
        let mut acc = vec![0f32; bm * n];
        for jb in view.row(ib) {
            let block = &values[jb * bm * bk..][..bm * bk];
            let b_rows = &bs[view.indices[jb] as usize * bk * n..][..bk * n];
            for r in 0..bm {
                let acc_row = &mut acc[r * n..][..n];
                for (q, &v) in block[r * bk..][..bk].iter().enumerate() {
                    let v = v.to_acc().widen() as f32;
                    acc_row.iter_mut().zip(&b_rows[q * n..][..n]).for_each(|(s, &x)| *s += v * x);
                }
            }
        }
        for r in 0..bm {
            let row = &mut rows[r * c.ld..][..n];
            row.iter_mut().zip(&acc[r * n..][..n]).for_each(|(o, &v)| blend.store(o, v));
        }
    });
    Ok(())
}

/// `C = alpha · A · B + beta · C` for f32 blocks, B and C: each block times B's rows through
/// the gemm crate's micro-kernels (packed panels, the machine's SIMD width), added into C's
/// rows with beta applied by the block row's first product; block rows over the context's
/// threads. Each block's product is rounded into C once (the reference sums all blocks first).
fn bsrmm_gemm(st: &Stream, alpha: f64, a: &Bsr, b: &Dense, beta: f64, c: &Dense) -> Result<()> {
    let (bm, bk, n) = (a.bm, a.bk, c.cols);
    // SAFETY: the plan runs this for f32 values, B and C only; host memory.
    let (view, values, bs, out) =
        unsafe { (a.view(), a.values.slice::<f32>(), b.slice::<f32>(), c.slice_mut::<f32>()) };
    let (ldb, ldc) = (b.ld as isize, c.ld as isize);
    let chunk = (c.ld * bm).max(1);
    let block_row = |(ib, rows): (usize, &mut [f32])| {
        let blocks = view.row(ib);
        if blocks.is_empty() {
            // alpha · 0 + beta · C, without reading C when beta = 0
            let blend = Blend::<f32>::new(alpha, beta);
            rows.chunks_mut(c.ld).take(bm).for_each(|r| r[..n].iter_mut().for_each(|o| blend.store(o, 0.0)));
            return;
        }
        for (q, jb) in blocks.enumerate() {
            let block = &values[jb * bm * bk..][..bm * bk];
            let b_rows = &bs[view.indices[jb] as usize * bk * b.ld..];
            let (read_c, keep) = if q == 0 { (beta != 0.0, beta as f32) } else { (true, 1.0) };
            let (c_rows, block, b_rows) =
                ((rows.as_mut_ptr(), ldc, 1), (block.as_ptr(), bk as isize, 1), (b_rows.as_ptr(), ldb, 1));
            // SAFETY: C's block row holds bm rows of n columns at stride ldc, the block bm x bk
            // row-major, B's rows bk x n at stride ldb (shapes checked by the op).
            unsafe { gemm_update((bm, n, bk), c_rows, read_c, block, b_rows, keep, alpha as f32, 1) };
        }
    };
    let multiply_adds = a.nnzb * bm * bk * n;
    if worth_sharing(st, multiply_adds) {
        st.ctx.run(|| out.par_chunks_mut(chunk).take(a.mb).enumerate().for_each(block_row));
    } else {
        out.chunks_mut(chunk).take(a.mb).enumerate().for_each(block_row);
    }
    Ok(())
}
