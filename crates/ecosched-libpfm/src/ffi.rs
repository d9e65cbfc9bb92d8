//! The calls into libpfm4 (`pfm_initialize`, `pfm_get_os_event_encoding`,
//! `pfm_strerror`), with the C layouts of `pfmlib.h` and
//! `pfmlib_perf_event.h` they rely on.
#![allow(unsafe_code)]

use crate::{EncodeError, LoadError, PerfEncoding};
use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Mutex, PoisonError};

/// The library's soname (the libpfm4 package installs it).
const LIBRARY: &str = "libpfm.so.4";
/// `PFM_SUCCESS`.
const PFM_SUCCESS: c_int = 0;
/// `PFM_PLM3`: count at user level; ecosched's perf builder sets the
/// privilege exclusions itself, only the event bits are taken.
const PFM_PLM3: c_int = 0x8;
/// `PFM_OS_PERF_EVENT`: encode for `perf_event_open`.
const PFM_OS_PERF_EVENT: c_int = 1;
/// Bytes of `struct perf_event_attr` handed to the library: larger than
/// every published version of the struct, so nothing it writes overflows.
const ATTR_WORDS: usize = 32;

/// `pfm_perf_encode_arg_t` (LP64: two pointers, a `size_t`, four `int`s
/// including the explicit padding, 40 bytes: `PFM_PERF_ENCODE_ABI0`).
#[repr(C)]
struct PerfEncodeArg {
    attr: *mut c_void,
    fstr: *mut *mut c_char,
    size: usize,
    idx: c_int,
    cpu: c_int,
    flags: c_int,
    pad0: c_int,
}

type InitializeFn = unsafe extern "C" fn() -> c_int;
type EncodeFn = unsafe extern "C" fn(*const c_char, c_int, c_int, *mut c_void) -> c_int;
type StrerrorFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// libpfm4's global tables are not safe to use from two threads at once.
static CALLS: Mutex<()> = Mutex::new(());

/// libpfm4, loaded and initialised.
pub struct LibPfm {
    encode: EncodeFn,
    strerror: StrerrorFn,
    /// Keeps the functions above mapped.
    _library: Library,
}

impl std::fmt::Debug for LibPfm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LibPfm")
    }
}

impl LibPfm {
    /// Load `libpfm.so.4` and initialise it for the running PMU (or the
    /// one `LIBPFM_FORCE_PMU` names).
    pub fn load() -> Result<LibPfm, LoadError> {
        // SAFETY: loading libpfm4 runs no initialiser with preconditions
        // of ours; it is a plain C library.
        let library = unsafe { Library::new(LIBRARY) }.map_err(|source| LoadError::Missing {
            library: LIBRARY,
            source,
        })?;
        let symbol_error = |symbol, source| LoadError::Symbol {
            library: LIBRARY,
            symbol,
            source,
        };
        // SAFETY: the three types are the C prototypes of pfmlib.h; the
        // copied function pointers stay valid while `_library` is held.
        let (initialize, encode, strerror) = unsafe {
            let initialize = *library
                .get::<InitializeFn>(b"pfm_initialize\0")
                .map_err(|e| symbol_error("pfm_initialize", e))?;
            let encode = *library
                .get::<EncodeFn>(b"pfm_get_os_event_encoding\0")
                .map_err(|e| symbol_error("pfm_get_os_event_encoding", e))?;
            let strerror = *library
                .get::<StrerrorFn>(b"pfm_strerror\0")
                .map_err(|e| symbol_error("pfm_strerror", e))?;
            (initialize, encode, strerror)
        };
        let lib = LibPfm {
            encode,
            strerror,
            _library: library,
        };
        let _guard = CALLS.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: takes no arguments; repeated calls return success.
        let ret = unsafe { initialize() };
        if ret != PFM_SUCCESS {
            return Err(LoadError::Initialize {
                message: lib.message(ret),
            });
        }
        drop(_guard);
        Ok(lib)
    }

    /// The perf encoding of `event` (`NAME[:UMASK...][:modifier=value]`)
    /// on the PMU libpfm4 detected.
    pub fn encode(&self, event: &str) -> Result<PerfEncoding, EncodeError> {
        let fail = |message: String| EncodeError {
            event: event.to_string(),
            message,
        };
        let name = CString::new(event).map_err(|_| fail("the name contains a NUL byte".into()))?;
        let mut attr = [0u64; ATTR_WORDS];
        let mut arg = PerfEncodeArg {
            attr: attr.as_mut_ptr().cast(),
            fstr: std::ptr::null_mut(),
            size: std::mem::size_of::<PerfEncodeArg>(),
            idx: 0,
            cpu: 0,
            flags: 0,
            pad0: 0,
        };
        let _guard = CALLS.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: `name` is NUL-terminated; `arg` has the layout and size
        // the library checks, points at a zeroed attr buffer larger than
        // any perf_event_attr, and asks for no formatted string.
        let ret = unsafe {
            (self.encode)(
                name.as_ptr(),
                PFM_PLM3,
                PFM_OS_PERF_EVENT,
                (&mut arg as *mut PerfEncodeArg).cast(),
            )
        };
        if ret != PFM_SUCCESS {
            return Err(fail(self.message(ret)));
        }
        // perf_event_attr: type (u32) and size (u32) in word 0, config in
        // word 1, config1 (bp_addr) in word 7.
        Ok(PerfEncoding {
            pmu_type: (attr[0] & 0xffff_ffff) as u32,
            config: attr[1],
            config1: attr[7],
        })
    }

    /// libpfm4's message for an error code.
    fn message(&self, code: c_int) -> String {
        // SAFETY: pfm_strerror returns a pointer to a static string (or
        // NULL), never one to free.
        let text = unsafe { (self.strerror)(code) };
        if text.is_null() {
            return format!("error {code}");
        }
        // SAFETY: non-null, NUL-terminated and static (above).
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}
