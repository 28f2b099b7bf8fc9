//! The safe core: handles' Rust types, validation, and dispatch to a backend.

pub mod bsr;
pub mod context;
pub mod csr;
pub mod dense;
pub mod faults;
pub mod memory;
pub mod ops;
pub mod plan;
pub mod spikes;
pub mod stats;

use crate::error::{Error, Result};

/// Operation on a sparse or dense matrix: as stored or transposed (C enum, stable values).
pub type evs_op = i32;
/// Use the matrix as stored.
pub const EVS_OP_N: evs_op = 0;
/// Use the transposed matrix.
pub const EVS_OP_T: evs_op = 1;

/// How an input array is read (C enum, stable values).
pub type evs_input_kind = i32;
/// Values multiply as they are (kernels may skip zeros).
pub const EVS_INPUT_FLOAT: evs_input_kind = 0;
/// Events: a bool byte is active iff non-zero, a float iff greater than zero; an active
/// event counts as 1.
pub const EVS_INPUT_EVENTS: evs_input_kind = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    N,
    T,
}

impl Op {
    pub fn from_raw(raw: evs_op) -> Result<Op> {
        match raw {
            EVS_OP_N => Ok(Op::N),
            EVS_OP_T => Ok(Op::T),
            _ => Err(Error::invalid_enum(format!("op: unknown value {raw} (expected EVS_OP_N or EVS_OP_T)"))),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Float,
    Events,
}

impl InputKind {
    pub fn from_raw(raw: evs_input_kind) -> Result<InputKind> {
        match raw {
            EVS_INPUT_FLOAT => Ok(InputKind::Float),
            EVS_INPUT_EVENTS => Ok(InputKind::Events),
            _ => Err(Error::invalid_enum(format!(
                "kind: unknown value {raw} (expected EVS_INPUT_FLOAT or EVS_INPUT_EVENTS)"
            ))),
        }
    }
}

/// Converts a size given through the C ABI, rejecting negative values and values beyond
/// `limit`.
pub fn size_arg(arg: &str, value: i64, limit: i64) -> Result<usize> {
    if value < 0 {
        return Err(Error::value(format!("{arg} = {value} is negative")));
    }
    if value > limit {
        return Err(Error::value(format!("{arg} = {value} exceeds the limit {limit}")));
    }
    Ok(value as usize)
}

/// Product of sizes, failing with `EVS_ERROR_INVALID_VALUE` on overflow.
pub fn checked_product(what: &str, factors: &[usize]) -> Result<usize> {
    factors
        .iter()
        .try_fold(1usize, |acc, &f| acc.checked_mul(f))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| Error::value(format!("{what}: size {factors:?} overflows")))
}
