//! The file-backed device: real pread/pwrite, a checksum per page verified on every read.
// Implemented by the storage task; see FileDevice's docs.
/// Placeholder until the file device lands.
#[derive(Debug)]
pub struct FileDevice;
