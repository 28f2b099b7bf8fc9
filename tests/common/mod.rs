//! Helpers shared by the Rust test suites: a seeded RNG and the context under test.
#![allow(dead_code)]

use evsparse::core::context::{Context, Stream, EVS_DEVICE_CPU, EVS_DEVICE_CUDA, EVS_DEVICE_DEFAULT};
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
    let kind = match std::env::var("EVS_TEST_DEVICE").as_deref() {
        Ok("cuda") => EVS_DEVICE_CUDA,
        Ok("default") => EVS_DEVICE_DEFAULT,
        _ => EVS_DEVICE_CPU,
    };
    let ctx = Context::new(kind, 0).unwrap();
    let stream = Stream::new(&ctx).unwrap();
    (ctx, stream)
}
