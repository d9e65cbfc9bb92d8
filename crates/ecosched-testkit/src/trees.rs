//! Writable copies of recorded machine trees: tests that drive a recorded
//! `/sys` (counters that advance, files a policy writes) work on a copy,
//! never on the tree kept in the repository.

use std::path::Path;

/// Copy the tree `from` into `to` (made if missing).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
