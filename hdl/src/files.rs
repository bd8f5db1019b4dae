//! A generated file (Verilog, or the C host driver).

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerilogFile {
    pub name: String,
    pub text: String,
}
