//! `run --power-model`: the choice of the ESTIMATED power model's figures,
//! shared with the daemon's `power_model` key (see
//! [`ecosched_service::power_model`]); here its errors become usage errors
//! that name the option.

use crate::outcome::UsageError;
use anyhow::Result;
pub use ecosched_service::power_model::{identity, matching_preset, Choice, AUTO};

/// Parse `--power-model`'s value.
pub fn load(choice: &str) -> Result<Choice> {
    ecosched_service::power_model::load(choice)
        .map_err(|e| UsageError(format!("--power-model {e}")).into())
}
