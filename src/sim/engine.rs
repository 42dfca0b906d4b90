//! Safe wrappers over the SimGrid C API: the engine, hosts, links, actors, mailboxes and
//! communications. Every raw SimGrid call in mpicast goes through this file.
//!
//! Two rules shape this API:
//! - The engine can be initialised once per process. [`Engine::init`] enforces it; callers run
//!   each simulation in a child process (see [`crate::sim::child`]).
//! - Actor bodies must not panic: SimGrid switches actor contexts under our stack, and a panic
//!   unwinding out of an actor takes the whole process down. Actors report errors through shared
//!   state and return normally.

use std::any::Any;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use super::ffi;

static ENGINE_STARTED: AtomicBool = AtomicBool::new(false);

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(
        "the SimGrid engine was already initialised in this process (one simulation per process)"
    )]
    AlreadyStarted,
    #[error("{0}: not a readable platform file")]
    PlatformMissing(String),
    #[error("no host named {0:?} in the platform")]
    NoSuchHost(String),
    #[error("invalid name {0:?} (contains a NUL byte)")]
    BadName(String),
}

/// The SimGrid engine of this process.
pub struct Engine {
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Engine options: SimGrid `--cfg` items (`name:value`) and which usage plugins to enable.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    pub cfg: Vec<String>,
    pub host_load: bool,
    pub link_load: bool,
    /// SimGrid's own log output (warnings and above) is kept when true, silenced otherwise.
    pub verbose: bool,
}

impl Engine {
    /// Initialises SimGrid with the given configuration. Fails if an engine already exists in
    /// this process.
    pub fn init(opts: &EngineOptions) -> Result<Engine, SimError> {
        if ENGINE_STARTED.swap(true, Ordering::SeqCst) {
            return Err(SimError::AlreadyStarted);
        }
        let thresh = if opts.verbose {
            "root.thresh:warning"
        } else {
            "root.thresh:critical"
        };
        let thresh = CString::new(thresh).expect("static string");
        let mut args: Vec<CString> = vec![CString::new("mpicast-sim").expect("static string")];
        for c in &opts.cfg {
            args.push(
                CString::new(format!("--cfg={c}")).map_err(|_| SimError::BadName(c.clone()))?,
            );
        }
        // simgrid_init may permute/remove the arguments it consumes: give it owned storage that
        // lives as long as the process (SimGrid keeps pointers into argv).
        let mut argv: Vec<*mut c_char> = args.into_iter().map(|s| s.into_raw()).collect();
        argv.push(ptr::null_mut());
        let argv = Box::leak(argv.into_boxed_slice());
        let mut argc: c_int = (argv.len() - 1) as c_int;
        // SAFETY: argv is a NULL-terminated array of valid C strings that lives forever; the
        // engine is initialised at most once per process (checked above).
        unsafe {
            ffi::xbt_log_control_set(thresh.as_ptr());
            ffi::simgrid_init(&mut argc, argv.as_mut_ptr());
            if opts.host_load {
                ffi::sg_host_load_plugin_init();
            }
            if opts.link_load {
                ffi::sg_link_load_plugin_init();
            }
        }
        Ok(Engine {
            _not_send: std::marker::PhantomData,
        })
    }

    /// Loads a SimGrid platform file (XML). SimGrid aborts the process on a malformed file, so
    /// callers validate the file first and run simulations in a child process.
    pub fn load_platform(&self, path: &Path) -> Result<(), SimError> {
        if !path.is_file() {
            return Err(SimError::PlatformMissing(path.display().to_string()));
        }
        let c = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| SimError::BadName(path.display().to_string()))?;
        // SAFETY: valid C string; engine initialised (self exists).
        unsafe { ffi::simgrid_load_platform(c.as_ptr()) };
        Ok(())
    }

    pub fn host(&self, name: &str) -> Result<Host, SimError> {
        let c = CString::new(name).map_err(|_| SimError::BadName(name.to_string()))?;
        // SAFETY: valid C string; returns NULL when absent.
        let h = unsafe { ffi::sg_host_by_name(c.as_ptr()) };
        if h.is_null() {
            Err(SimError::NoSuchHost(name.to_string()))
        } else {
            Ok(Host(h))
        }
    }

    /// All hosts of the loaded platform, in SimGrid's order (sorted by name).
    pub fn hosts(&self) -> Vec<Host> {
        // SAFETY: sg_host_list returns a malloc'ed array of sg_host_count() entries that we free.
        unsafe {
            let n = ffi::sg_host_count();
            let list = ffi::sg_host_list();
            let hosts = (0..n).map(|i| Host(*list.add(i))).collect();
            libc_free(list as *mut c_void);
            hosts
        }
    }

    /// All links of the loaded platform.
    pub fn links(&self) -> Vec<Link> {
        // SAFETY: as for hosts.
        unsafe {
            let n = ffi::sg_link_count();
            let list = ffi::sg_link_list();
            let links = (0..n).map(|i| Link(*list.add(i))).collect();
            libc_free(list as *mut c_void);
            links
        }
    }

    /// Creates an actor on `host` that runs `body` once the simulation runs.
    pub fn spawn(
        &self,
        name: &str,
        host: Host,
        body: impl FnOnce() + 'static,
    ) -> Result<Actor, SimError> {
        spawn_actor(name, host, Box::new(body))
    }

    /// Runs the simulation until every actor has finished.
    pub fn run(&self) {
        // SAFETY: engine initialised and a platform loaded by the caller.
        unsafe { ffi::simgrid_run() }
    }

    /// Simulated time, seconds.
    pub fn clock(&self) -> f64 {
        now()
    }
}

unsafe extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
}

type ActorBody = Box<dyn FnOnce()>;

extern "C-unwind" fn actor_trampoline(_argc: c_int, _argv: *mut *mut c_char) {
    // SAFETY: spawn_actor stored a Box<ActorBody> as this actor's data before starting it, and
    // nothing else sets or reads it; we take ownership exactly once.
    let body: Box<ActorBody> = unsafe {
        let data = ffi::sg_actor_self_get_data() as *mut ActorBody;
        ffi::sg_actor_self_set_data(ptr::null_mut());
        Box::from_raw(data)
    };
    (*body)();
}

/// Stack size of the actors spawned from now on, KiB (see [`set_actor_stack_kib`]).
static ACTOR_STACK_KIB: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(256);

/// Sets the stack size of actors spawned from now on. Replay actors keep little on the stack:
/// 256 KiB (the default) leaves room for deep std formatting; very large replays use less.
pub fn set_actor_stack_kib(kib: usize) {
    ACTOR_STACK_KIB.store(kib.max(16), std::sync::atomic::Ordering::Relaxed);
}

/// An actor, kept by SimGrid until the simulation ends (its spawn takes a reference).
#[derive(Clone, Copy, Debug)]
pub struct Actor(ffi::sg_actor_t);

fn spawn_actor(name: &str, host: Host, body: ActorBody) -> Result<Actor, SimError> {
    let cname = CString::new(name).map_err(|_| SimError::BadName(name.to_string()))?;
    let data = Box::into_raw(Box::new(body)) as *mut c_void;
    // SAFETY: host is a live host of the loaded platform; data is a leaked Box<ActorBody> that the
    // trampoline reclaims; SimGrid copies the name.
    unsafe {
        let actor = ffi::sg_actor_init(cname.as_ptr(), host.0);
        ffi::sg_actor_set_stacksize(actor, ACTOR_STACK_KIB.load(std::sync::atomic::Ordering::Relaxed) as _);
        ffi::sg_actor_set_data(actor, data);
        ffi::sg_actor_start_(actor, Some(actor_trampoline), 0, ptr::null());
        // Held until the process ends: a mailbox may name the actor as its receiver after the
        // actor finished.
        ffi::sg_actor_ref(actor);
        Ok(Actor(actor))
    }
}

/// A host of the loaded platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Host(ffi::sg_host_t);

impl Host {
    pub fn name(&self) -> String {
        // SAFETY: live host; SimGrid returns a NUL-terminated string it owns.
        unsafe {
            CStr::from_ptr(ffi::sg_host_get_name(self.0))
                .to_string_lossy()
                .into_owned()
        }
    }
    /// Peak speed, flop/s per core.
    pub fn speed_flops(&self) -> f64 {
        // SAFETY: live host.
        unsafe { ffi::sg_host_get_speed(self.0) }
    }
    pub fn core_count(&self) -> usize {
        // SAFETY: live host.
        unsafe { ffi::sg_host_core_count(self.0) as usize }
    }
    /// Flops computed on this host so far (needs `EngineOptions::host_load`).
    pub fn computed_flops(&self) -> f64 {
        // SAFETY: live host; the load plugin was initialised when host_load was set.
        unsafe { ffi::sg_host_get_computed_flops(self.0) }
    }
    /// Latency of the route to `other`, seconds.
    pub fn route_latency_s(&self, other: Host) -> f64 {
        // SAFETY: live hosts.
        unsafe { ffi::sg_host_get_route_latency(self.0, other.0) }
    }
    /// The links a message to `other` crosses, in order.
    pub fn route_links(&self, other: Host) -> Vec<Link> {
        // SAFETY: live hosts; the dynar holds sg_link_t values, is filled by SimGrid and freed
        // here (the links themselves belong to the platform).
        unsafe {
            let mut d = ffi::xbt_dynar_new(std::mem::size_of::<ffi::sg_link_t>() as _, None);
            ffi::sg_host_get_route(self.0, other.0, d);
            let n = ffi::xbt_dynar_length(d);
            let links = (0..n)
                .map(|i| Link(*(ffi::xbt_dynar_get_ptr(d, i) as *const ffi::sg_link_t)))
                .collect();
            ffi::xbt_dynar_free(&mut d);
            links
        }
    }
    /// Bottleneck bandwidth of the route to `other`, bytes/s.
    pub fn route_bandwidth_bytes_per_s(&self, other: Host) -> f64 {
        // SAFETY: live hosts.
        unsafe { ffi::sg_host_get_route_bandwidth(self.0, other.0) }
    }
}

/// A link of the loaded platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Link(ffi::sg_link_t);

impl Link {
    pub fn name(&self) -> String {
        // SAFETY: live link; SimGrid owns the string.
        unsafe {
            CStr::from_ptr(ffi::sg_link_get_name(self.0))
                .to_string_lossy()
                .into_owned()
        }
    }
    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        // SAFETY: live link.
        unsafe { ffi::sg_link_get_bandwidth(self.0) }
    }
    /// Whether transfers share its bandwidth (false for a fat pipe).
    pub fn is_shared(&self) -> bool {
        // SAFETY: live link.
        unsafe { ffi::sg_link_is_shared(self.0) != 0 }
    }
    pub fn latency_s(&self) -> f64 {
        // SAFETY: live link.
        unsafe { ffi::sg_link_get_latency(self.0) }
    }
    /// Starts recording this link's load (link_load plugin; call once the simulation runs).
    pub fn track_load(&self) {
        // SAFETY: live link; plugin initialised when link_load was set.
        unsafe { ffi::sg_link_load_track(self.0) }
    }
    /// Bytes carried since tracking started.
    pub fn cumulated_bytes(&self) -> f64 {
        // SAFETY: live link.
        unsafe { ffi::sg_link_get_cum_load(self.0) }
    }
}

// ---- Calls valid only from inside an actor -------------------------------------------------

/// Simulated time, seconds.
pub fn now() -> f64 {
    // SAFETY: reads the engine clock; 0 before the engine runs.
    unsafe { ffi::simgrid_get_clock() }
}

/// Computes `flops` on the calling actor's host (blocks the actor).
pub fn execute(flops: f64) {
    if flops > 0.0 {
        // SAFETY: called from an actor.
        unsafe { ffi::mpicast_execute(flops) }
    }
}

/// Sleeps the calling actor for `seconds`.
pub fn sleep(seconds: f64) {
    if seconds > 0.0 {
        // SAFETY: called from an actor.
        unsafe { ffi::sg_actor_sleep_for(seconds) }
    }
}

/// The host the calling actor runs on.
pub fn this_host() -> Host {
    // SAFETY: called from an actor.
    Host(unsafe { ffi::sg_host_self() })
}

/// What travels through a mailbox: any owned value.
pub type Payload = Box<dyn Any>;

/// A SimGrid mailbox: a rendez-vous point where sends meet receives.
#[derive(Clone, Copy, Debug)]
pub struct Mailbox(ffi::sg_mailbox_t);

impl Mailbox {
    pub fn by_name(name: &str) -> Mailbox {
        let c = CString::new(name.replace('\0', "?")).expect("NUL bytes replaced");
        // SAFETY: valid C string; SimGrid copies it and returns a process-lifetime mailbox.
        Mailbox(unsafe { ffi::sg_mailbox_by_name(c.as_ptr()) })
    }

    /// Sends `payload`, simulating `bytes` on the network; blocks until received.
    pub fn put(&self, payload: Payload, bytes: u64) {
        let raw = Box::into_raw(Box::new(payload)) as *mut c_void;
        // SAFETY: raw is a non-null leaked Box<Payload> that the receiver reclaims.
        unsafe { ffi::sg_mailbox_put(self.0, raw, bytes as i64) }
    }

    /// Starts a send; the returned handle must be waited or tested to completion.
    pub fn put_async(&self, payload: Payload, bytes: u64) -> Comm {
        let raw = Box::into_raw(Box::new(payload)) as *mut c_void;
        // SAFETY: as for put.
        let c = unsafe { ffi::sg_mailbox_put_async(self.0, raw, bytes as i64) };
        Comm {
            raw: c,
            slot: None,
            done: false,
            bare: false,
        }
    }

    /// Starts a send that carries no payload, only `bytes` of simulated size (replay traffic).
    pub fn put_bare_async(&self, bytes: u64) -> Comm {
        // SAFETY: the payload is a pointer to a static byte that nobody dereferences (receivers
        // of bare sends use get_bare_async, which never reads it).
        let c = unsafe { ffi::sg_mailbox_put_async(self.0, bare_payload(), bytes as i64) };
        Comm {
            raw: c,
            slot: None,
            done: false,
            bare: true,
        }
    }

    /// Sends `bytes` of simulated size without payload and without waiting: SimGrid completes
    /// the transfer once a receiver matches it (an eager, detached MPI send).
    pub fn put_bare_detached(&self, bytes: u64) {
        // SAFETY: as for put_bare_async; a detached comm is released by SimGrid on completion and
        // has no payload to clean.
        unsafe {
            // detach() starts an initialised comm detached; it refuses a started one.
            let c = ffi::sg_mailbox_put_init(self.0, bare_payload(), bytes as i64);
            ffi::sg_comm_detach(c, None);
        }
    }

    /// Makes `actor` the receiver of every send to this mailbox from the moment it is posted
    /// (s4u's permanent receiver: the transfer starts at once, and a receive posted later takes
    /// it, finished or under way); None: sends wait for their receive again.
    pub fn set_receiver(&self, actor: Option<Actor>) {
        // SAFETY: called from an actor; the actor is alive (spawn holds a reference) or null.
        unsafe { ffi::mpicast_mailbox_set_receiver(self.0, actor.map_or(ptr::null_mut(), |a| a.0)) }
    }

    /// Receives a bare send, blocking until it is over: one simcall where starting a receive
    /// and waiting for it take two.
    pub fn get_bare(&self) {
        // SAFETY: called from an actor; the payload of a bare send is a static byte, not owned.
        unsafe { ffi::mpicast_mailbox_recv(self.0) };
    }

    /// Sends `bytes` of replay traffic, blocking until the receiver has them (one simcall).
    pub fn put_bare(&self, bytes: u64) {
        // SAFETY: called from an actor; the payload is a static byte nobody frees.
        unsafe { ffi::mpicast_mailbox_send(self.0, bare_payload(), bytes) };
    }

    /// Starts a receive of a bare send (see [`Mailbox::put_bare_async`]).
    pub fn get_bare_async(&self) -> Comm {
        let mut slot: Box<*mut c_void> = Box::new(ptr::null_mut());
        // SAFETY: the slot is heap-allocated and owned by the returned Comm (leaked if the Comm is
        // dropped before completion).
        let c = unsafe { ffi::sg_mailbox_get_async(self.0, &mut *slot as *mut *mut c_void) };
        Comm {
            raw: c,
            slot: Some(slot),
            done: false,
            bare: true,
        }
    }

    /// Receives one payload; blocks until a matching send arrives.
    pub fn get(&self) -> Payload {
        // SAFETY: every pointer put into a mailbox by this module is a leaked Box<Payload>.
        unsafe { *Box::from_raw(ffi::sg_mailbox_get(self.0) as *mut Payload) }
    }

    /// Starts a receive; the payload is available from [`Comm::take_payload`] once complete.
    pub fn get_async(&self) -> Comm {
        let mut slot: Box<*mut c_void> = Box::new(ptr::null_mut());
        // SAFETY: the slot is heap-allocated and owned by the returned Comm, so it outlives the
        // communication as long as the Comm is waited before being dropped.
        let c = unsafe { ffi::sg_mailbox_get_async(self.0, &mut *slot as *mut *mut c_void) };
        Comm {
            raw: c,
            slot: Some(slot),
            done: false,
            bare: false,
        }
    }
}

static BARE_BYTE: u8 = 0;

fn bare_payload() -> *mut c_void {
    &BARE_BYTE as *const u8 as *mut c_void
}

/// An asynchronous communication in flight.
pub struct Comm {
    raw: ffi::sg_comm_t,
    slot: Option<Box<*mut c_void>>,
    done: bool,
    /// No payload (replay traffic): the slot holds a pointer to a static byte.
    bare: bool,
}

impl Comm {
    /// Blocks until the communication completes.
    pub fn wait(&mut self) {
        if !self.done {
            // SAFETY: raw is a live comm that has not completed; SimGrid releases it on completion.
            unsafe { ffi::sg_comm_wait(self.raw) };
            self.done = true;
        }
    }

    /// True once complete (does not block).
    pub fn test(&mut self) -> bool {
        if !self.done {
            // SAFETY: live comm; a true result releases it.
            self.done = unsafe { ffi::sg_comm_test(self.raw) } != 0;
        }
        self.done
    }

    /// The received payload of a completed receive (None for sends or when already taken).
    pub fn take_payload(&mut self) -> Option<Payload> {
        if !self.done || self.bare {
            return None;
        }
        let slot = self.slot.as_mut()?;
        let p = std::mem::replace(&mut **slot, ptr::null_mut());
        if p.is_null() {
            None
        } else {
            // SAFETY: the sender stored a leaked Box<Payload>.
            Some(unsafe { *Box::from_raw(p as *mut Payload) })
        }
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Drops our handle on a communication that is known to be over (its receiver's wait
    /// returned) without a simcall. A handle released while the transfer still runs only makes
    /// SimGrid log a warning; the transfer goes on.
    pub fn release_completed(mut self) {
        if !self.done {
            // SAFETY: live comm handle that we own one reference to; after this we never use it.
            unsafe { ffi::sg_comm_unref(self.raw) };
            self.done = true;
        }
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if !self.done {
            // SimGrid may still write into the receive slot: leak it rather than free it.
            if let Some(slot) = self.slot.take() {
                Box::leak(slot);
            }
        }
    }
}

/// Waits until one of `comms` that is not done yet completes; returns its index, or None when
/// all are done.
pub fn wait_any(comms: &mut [&mut Comm]) -> Option<usize> {
    let idx: Vec<usize> = (0..comms.len()).filter(|&i| !comms[i].done).collect();
    if idx.is_empty() {
        return None;
    }
    let mut raws: Vec<ffi::sg_comm_t> = idx.iter().map(|&i| comms[i].raw).collect();
    // SAFETY: every raw comm in the array is live and not yet completed.
    let k = unsafe { ffi::sg_comm_wait_any(raws.as_mut_ptr(), raws.len()) };
    if k < 0 {
        return None;
    }
    let i = idx[k as usize];
    comms[i].done = true;
    Some(i)
}
