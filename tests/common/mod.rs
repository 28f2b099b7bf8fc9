//! Helpers shared by the Rust test suites: a seeded RNG, the context under test, and arrays
//! moved between f64 host values and any dtype on a context.
#![allow(dead_code)]

use evsparse::core::context::{Context, Stream, EVS_DEVICE_CPU, EVS_DEVICE_CUDA, EVS_DEVICE_DEFAULT};
use evsparse::core::dense::Dense;
use evsparse::dtype::DType;
use half::{bf16, f16};
use std::sync::Arc;

/// xorshift64*, seeded from EVS_TEST_SEED or the clock (printed, to replay a failure).
pub struct Rng(pub u64);
impl Rng {
    pub fn new() -> Rng {
        let seed = std::env::var("EVS_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
        });
        println!("seed: EVS_TEST_SEED={seed}");
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(2685821657736338717)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// A context on EVS_TEST_DEVICE (cpu by default; cuda or default), and a stream on it.
pub fn setup() -> (Arc<Context>, Stream) {
    try_setup().unwrap()
}

/// The same, failing with the library's error.
pub fn try_setup() -> evsparse::error::Result<(Arc<Context>, Stream)> {
    let kind = match std::env::var("EVS_TEST_DEVICE").as_deref() {
        Ok("cuda") => EVS_DEVICE_CUDA,
        Ok("default") => EVS_DEVICE_DEFAULT,
        _ => EVS_DEVICE_CPU,
    };
    let ctx = Context::new(kind, 0)?;
    let stream = Stream::new(&ctx)?;
    Ok((ctx, stream))
}

/// A count from the environment variable `name`, if set and a number.
pub fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Host values as the bytes of dtype `t`.
pub fn encode(t: DType, values: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * t.size());
    for &v in values {
        match t {
            DType::F16 => out.extend(f16::from_f64(v).to_le_bytes()),
            DType::BF16 => out.extend(bf16::from_f64(v).to_le_bytes()),
            DType::F32 => out.extend((v as f32).to_le_bytes()),
            DType::F64 => out.extend(v.to_le_bytes()),
            DType::Bool => out.push((v != 0.0) as u8),
            DType::I32 => out.extend((v as i32).to_le_bytes()),
            DType::I64 => out.extend((v as i64).to_le_bytes()),
        }
    }
    out
}

/// Bytes of dtype `t` as host values.
pub fn decode(t: DType, bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks(t.size())
        .map(|c| match t {
            DType::F16 => f16::from_le_bytes([c[0], c[1]]).to_f64(),
            DType::BF16 => bf16::from_le_bytes([c[0], c[1]]).to_f64(),
            DType::F32 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::F64 => f64::from_le_bytes(c.try_into().unwrap()),
            DType::Bool => c[0] as f64,
            DType::I32 => i32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::I64 => i64::from_le_bytes(c.try_into().unwrap()) as f64,
        })
        .collect()
}

/// A new array of dtype `t` and shape (ndim, rows, cols) on the context, holding `values`.
pub fn upload(ctx: &Arc<Context>, s: &Stream, t: DType, shape: (u32, usize, usize), values: &[f64]) -> Dense {
    let d = Dense::create(ctx, t, shape.0, shape.1 as i64, shape.2 as i64).unwrap();
    let bytes = encode(t, values);
    unsafe { d.copy_from_host(s, bytes.as_ptr(), values.len()).unwrap() };
    s.synchronize().unwrap();
    d
}

/// The array's elements, packed row-major, as host values.
pub fn read(s: &Stream, d: &Dense) -> Vec<f64> {
    let mut bytes = vec![0u8; d.numel() * d.dtype.size()];
    unsafe { d.copy_to_host(s, bytes.as_mut_ptr(), d.numel()).unwrap() };
    s.synchronize().unwrap();
    decode(d.dtype, &bytes)
}
