//! Fuzz entry points.
