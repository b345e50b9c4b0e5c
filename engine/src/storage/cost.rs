//! Device cost profiles: counted I/O in, modelled time out.
// Implemented by the storage task; see DeviceProfile's docs.
/// Placeholder until the cost model lands.
#[derive(Debug, Clone, Copy)]
pub enum DeviceProfile {
    Nvme,
}
