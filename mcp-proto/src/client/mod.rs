//! The client connection machine.
