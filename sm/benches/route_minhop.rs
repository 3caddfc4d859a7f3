//! Min-hop on a k36 fat tree (placeholder until the full benchmark lands).
fn main() {}
