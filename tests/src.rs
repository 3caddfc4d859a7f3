//! Cross-crate scenario and interop tests live in `tests/`.
