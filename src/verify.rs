//! The verification suite (being written).
