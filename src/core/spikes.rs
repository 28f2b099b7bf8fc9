//! Spike lists (SPEC §3), the third input kind of the event-driven operations: the int32
//! indices of the active neurons and their count, which stays on the device, as
//! `evs_compact_events` writes them and GPU simulators keep them.
//!
//! The count is read where the work runs. A CPU context checks the list before any work (the
//! count within [0, capacity], every listed index within [0, neurons)) and rejects a bad one;
//! a GPU kernel cannot report without a host sync, so it clamps the count to [0, capacity]
//! and skips indices out of range: never an access out of bounds.

use super::context::Stream;
use super::dense::Dense;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// A spike list: `indices[0..count[0])` are the active neurons (the array's length is the
/// list's capacity). A repeated index counts once per occurrence.
#[derive(Clone, Copy)]
pub struct SpikeList<'a> {
    pub indices: &'a Dense,
    pub count: &'a Dense,
}

/// The spikes of a plasticity rule: an event vector (bool or float) or a spike list.
#[derive(Clone, Copy)]
pub enum Spikes<'a> {
    Events(&'a Dense),
    List(SpikeList<'a>),
}

/// Spikes as a CPU context reads them: an event vector, or the checked entries of a list.
#[derive(Clone, Copy)]
pub enum HostSpikes<'a> {
    Events(&'a Dense),
    Listed(&'a [u32]),
}

impl<'a> Spikes<'a> {
    /// The spikes on a CPU context, a list checked against a population of `neurons`.
    pub fn on_host(self, neurons: usize) -> Result<HostSpikes<'a>> {
        match self {
            Spikes::Events(x) => Ok(HostSpikes::Events(x)),
            Spikes::List(list) => list.host_entries(neurons).map(HostSpikes::Listed),
        }
    }
}

impl<'a> SpikeList<'a> {
    /// The types and shapes: indices a 1-D int32 array of any length, count an int32 vector
    /// of length 1; both of the stream's context.
    pub fn check(&self, s: &Stream) -> Result<()> {
        s.expect_context("spike indices", &self.indices.ctx)?;
        s.expect_context("spike count", &self.count.ctx)?;
        self.indices.dtype.expect("spike indices", DType::I32)?;
        self.count.dtype.expect("spike count", DType::I32)?;
        if self.indices.ndim != 1 {
            return Err(Error::shape(format!("spike indices must be a 1-D array, got a {}", self.indices.describe())));
        }
        self.count.expect_vector("spike count", 1)
    }

    /// Indices the list has room for.
    pub fn capacity(&self) -> usize {
        self.indices.rows
    }

    /// The listed neurons on a CPU context, checked against a population of `neurons`.
    pub fn host_entries(&self, neurons: usize) -> Result<&'a [u32]> {
        // SAFETY: both arrays are int32 (checked) host memory; count has one element.
        let (count, indices) = unsafe { (self.count.slice::<i32>()[0], self.indices.slice::<i32>()) };
        if count < 0 || count as usize > indices.len() {
            return Err(Error::value(format!(
                "spike count = {count} is outside [0, {}] (the capacity of the spike indices)",
                indices.len()
            )));
        }
        let listed = &indices[..count as usize];
        if let Some((t, &v)) = listed.iter().enumerate().find(|(_, &v)| v < 0 || v as usize >= neurons) {
            return Err(Error::value(format!("spike indices[{t}] = {v} is out of range for {neurons} neurons")));
        }
        // SAFETY: every listed index is non-negative, so its bits read the same as a u32.
        Ok(unsafe { std::slice::from_raw_parts(listed.as_ptr() as *const u32, listed.len()) })
    }

    /// Fails when `out` shares memory with the list.
    pub fn expect_disjoint_from(&self, arg: &str, out: &Dense) -> Result<()> {
        out.expect_disjoint(arg, self.indices, "the spike indices")?;
        out.expect_disjoint(arg, self.count, "the spike count")
    }
}
