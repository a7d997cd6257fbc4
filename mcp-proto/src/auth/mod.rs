pub mod challenge;
pub mod form;
pub mod metadata;
pub mod token;
