//! placeholder
pub struct LsmKv;
