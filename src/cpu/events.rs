//! Event compaction.

use super::products::with_active_indices;
use crate::core::dense::Dense;
use crate::error::Result;

/// Writes the sorted indices of active events to `indices[0..count]` and the count to `count[0]`.
pub fn compact(spikes: &Dense, indices: &Dense, count: &Dense) -> Result<()> {
    with_active_indices(spikes, |active| {
        // SAFETY: the op checked that both outputs are int32; host memory.
        let (idx, cnt) = unsafe { (indices.slice_mut::<i32>(), count.slice_mut::<i32>()) };
        idx.iter_mut().zip(active).for_each(|(slot, &i)| *slot = i as i32);
        cnt[0] = active.len() as i32;
        Ok(())
    })
}
