//! The native controller's byte layouts (`src/controller/layout.rs`) on
//! every OS: the controller itself is Windows-only, its layouts are not.
//! On Windows the same tests run as the controller's unit tests.
#![cfg(not(windows))]

#[allow(dead_code)]
#[path = "../src/controller/layout.rs"]
mod layout;
