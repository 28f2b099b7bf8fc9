//! Block-sparse × dense products.

use super::{packed, Blend};
use crate::core::bsr::Bsr;
use crate::core::dense::Dense;
use crate::dtype::{with_float, Acc, DType, Float};
use crate::error::{Error, Result};
use rayon::prelude::*;

/// `C = alpha · A · B + beta · C`, accumulating in f32, one block row per task.
pub fn bsrmm(alpha: f64, a: &Bsr, b: &Dense, beta: f64, c: &Dense) -> Result<()> {
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
