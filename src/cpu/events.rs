//! Event compaction.

use super::load_events;
use crate::core::dense::Dense;
use crate::error::Result;

/// Writes the sorted indices of active events to `indices[0..count]` and the count to `count[0]`.
pub fn compact(spikes: &Dense, indices: &Dense, count: &Dense) -> Result<()> {
    let active = load_events(spikes)?;
    // SAFETY: the op checked that both outputs are int32; host memory.
    let (idx, cnt) = unsafe { (indices.slice_mut::<i32>(), count.slice_mut::<i32>()) };
    let mut n = 0;
    for (i, _) in active.iter().enumerate().filter(|(_, &a)| a) {
        idx[n] = i as i32;
        n += 1;
    }
    cnt[0] = n as i32;
    Ok(())
}
