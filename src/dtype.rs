//! Element types, their accumulator types, and the C enum values that name them.

use crate::error::{Error, Result};
use half::{bf16, f16};
use std::ops::{Add, Mul};

/// Element type of an array (C enum, stable values).
pub type evs_dtype = i32;
/// IEEE 754 binary16.
pub const EVS_DTYPE_F16: evs_dtype = 1;
/// bfloat16.
pub const EVS_DTYPE_BF16: evs_dtype = 2;
/// IEEE 754 binary32.
pub const EVS_DTYPE_F32: evs_dtype = 3;
/// IEEE 754 binary64.
pub const EVS_DTYPE_F64: evs_dtype = 4;
/// One byte per element; an event is active iff the byte is non-zero.
pub const EVS_DTYPE_BOOL: evs_dtype = 5;
/// 32-bit signed integer (indices, counts).
pub const EVS_DTYPE_I32: evs_dtype = 6;
/// 64-bit signed integer (indices).
pub const EVS_DTYPE_I64: evs_dtype = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F16,
    BF16,
    F32,
    F64,
    Bool,
    I32,
    I64,
}

impl DType {
    pub fn from_raw(raw: evs_dtype, arg: &str) -> Result<DType> {
        Ok(match raw {
            EVS_DTYPE_F16 => DType::F16,
            EVS_DTYPE_BF16 => DType::BF16,
            EVS_DTYPE_F32 => DType::F32,
            EVS_DTYPE_F64 => DType::F64,
            EVS_DTYPE_BOOL => DType::Bool,
            EVS_DTYPE_I32 => DType::I32,
            EVS_DTYPE_I64 => DType::I64,
            _ => return Err(Error::invalid_enum(format!("{arg}: unknown dtype {raw}"))),
        })
    }

    pub fn raw(self) -> evs_dtype {
        match self {
            DType::F16 => EVS_DTYPE_F16,
            DType::BF16 => EVS_DTYPE_BF16,
            DType::F32 => EVS_DTYPE_F32,
            DType::F64 => EVS_DTYPE_F64,
            DType::Bool => EVS_DTYPE_BOOL,
            DType::I32 => EVS_DTYPE_I32,
            DType::I64 => EVS_DTYPE_I64,
        }
    }

    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::Bool => "bool",
            DType::I32 => "i32",
            DType::I64 => "i64",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Fails unless this dtype can carry events (bool or a float type).
    pub fn expect_event(self, arg: &str) -> Result<()> {
        if self.is_float() || self == DType::Bool {
            Ok(())
        } else {
            Err(Error::dtype(format!("{arg}: events must be bool or a float dtype, got {}", self.name())))
        }
    }

    pub fn expect_float(self, arg: &str) -> Result<()> {
        if self.is_float() {
            Ok(())
        } else {
            Err(Error::dtype(format!("{arg}: expected a float dtype, got {}", self.name())))
        }
    }

    pub fn expect(self, arg: &str, expected: DType) -> Result<()> {
        if self == expected {
            Ok(())
        } else {
            Err(Error::dtype(format!("{arg} has dtype {}, expected {}", self.name(), expected.name())))
        }
    }
}

/// Accumulator arithmetic: f32 for f16/bf16/f32, f64 for f64.
pub trait Acc: Copy + Send + Sync + PartialOrd + Add<Output = Self> + Mul<Output = Self> + 'static {
    const ZERO: Self;
    const ONE: Self;
    fn cast(v: f64) -> Self;
    fn widen(self) -> f64;
}

impl Acc for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn cast(v: f64) -> Self {
        v as f32
    }
    fn widen(self) -> f64 {
        self as f64
    }
}

impl Acc for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn cast(v: f64) -> Self {
        v
    }
    fn widen(self) -> f64 {
        self
    }
}

/// A float element type stored in arrays, with its accumulator.
pub trait Float: Copy + Send + Sync + 'static {
    type Acc: Acc;
    const DTYPE: DType;
    fn to_acc(self) -> Self::Acc;
    fn from_acc(a: Self::Acc) -> Self;
    fn from_f64(v: f64) -> Self;
}

macro_rules! impl_float {
    ($t:ty, $acc:ty, $dtype:expr, $to:expr, $from:expr, $from64:expr) => {
        impl Float for $t {
            type Acc = $acc;
            const DTYPE: DType = $dtype;
            fn to_acc(self) -> $acc {
                $to(self)
            }
            fn from_acc(a: $acc) -> Self {
                $from(a)
            }
            fn from_f64(v: f64) -> Self {
                $from64(v)
            }
        }
    };
}

impl_float!(f16, f32, DType::F16, f16::to_f32, f16::from_f32, f16::from_f64);
impl_float!(bf16, f32, DType::BF16, bf16::to_f32, bf16::from_f32, bf16::from_f64);
impl_float!(f32, f32, DType::F32, |x| x, |x| x, |x| x as f32);
impl_float!(f64, f64, DType::F64, |x| x, |x| x, |x| x);

/// An element that can be read as an event: bool bytes are active iff non-zero,
/// floats iff greater than zero.
pub trait Event: Copy + Send + Sync + 'static {
    fn active(self) -> bool;
}

impl Event for u8 {
    fn active(self) -> bool {
        self != 0
    }
}

macro_rules! impl_float_event {
    ($($t:ty),*) => {$(
        impl Event for $t {
            fn active(self) -> bool {
                self.to_acc() > <$t as Float>::Acc::ZERO
            }
        }
    )*};
}
impl_float_event!(f16, bf16, f32, f64);

/// Runs `$body` with `$T` bound to the Rust type of a float dtype.
macro_rules! with_float {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            other => return Err($crate::error::Error::internal(format!("no float kernel for dtype {}", other.name()))),
        }
    };
}

/// Runs `$body` with `$E` bound to the Rust type of an event dtype (bool or float).
macro_rules! with_event {
    ($dtype:expr, $E:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Bool => {
                type $E = u8;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $E = half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $E = half::bf16;
                $body
            }
            $crate::dtype::DType::F32 => {
                type $E = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $E = f64;
                $body
            }
            other => return Err($crate::error::Error::internal(format!("no event kernel for dtype {}", other.name()))),
        }
    };
}

pub(crate) use {with_event, with_float};
