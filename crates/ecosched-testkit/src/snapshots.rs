//! Snapshots built task by task for policy tests.
