//! What the front end knows of MPI and P2PDC routines: argument roles and datatype sizes.

/// Argument positions of a communication routine (None when the routine has no such argument).
#[derive(Debug, Clone, Copy)]
pub struct CommSig {
    pub count: Option<usize>,
    pub datatype: Option<usize>,
    pub peer: Option<usize>,
    pub tag: Option<usize>,
    pub root: Option<usize>,
    pub comm: Option<usize>,
}

const fn sig(count: Option<usize>, datatype: Option<usize>, peer: Option<usize>, tag: Option<usize>, root: Option<usize>, comm: Option<usize>) -> CommSig {
    CommSig { count, datatype, peer, tag, root, comm }
}

/// The routines recorded as communication sites, with their argument roles.
pub fn comm_signature(name: &str) -> Option<CommSig> {
    let s = match name {
        "MPI_Send" | "MPI_Ssend" | "MPI_Bsend" | "MPI_Rsend" | "MPI_Isend" | "MPI_Issend" | "MPI_Ibsend"
        | "MPI_Irsend" | "MPI_Recv" | "MPI_Irecv" => sig(Some(1), Some(2), Some(3), Some(4), None, Some(5)),
        "MPI_Sendrecv" => sig(Some(1), Some(2), Some(3), Some(4), None, Some(10)),
        "MPI_Sendrecv_replace" => sig(Some(1), Some(2), Some(3), Some(4), None, Some(7)),
        "MPI_Probe" | "MPI_Iprobe" => sig(None, None, Some(0), Some(1), None, Some(2)),
        "MPI_Wait" | "MPI_Waitall" | "MPI_Waitany" | "MPI_Waitsome" | "MPI_Test" | "MPI_Testall"
        | "MPI_Testany" | "MPI_Testsome" => sig(None, None, None, None, None, None),
        "MPI_Barrier" => sig(None, None, None, None, None, Some(0)),
        "MPI_Bcast" => sig(Some(1), Some(2), None, None, Some(3), Some(4)),
        "MPI_Reduce" => sig(Some(2), Some(3), None, None, Some(5), Some(6)),
        "MPI_Allreduce" | "MPI_Scan" | "MPI_Exscan" | "MPI_Reduce_scatter_block" => {
            sig(Some(2), Some(3), None, None, None, Some(5))
        }
        "MPI_Reduce_scatter" => sig(None, Some(3), None, None, None, Some(5)),
        "MPI_Gather" | "MPI_Scatter" => sig(Some(1), Some(2), None, None, Some(6), Some(7)),
        "MPI_Allgather" | "MPI_Alltoall" => sig(Some(1), Some(2), None, None, None, Some(6)),
        "MPI_Gatherv" => sig(Some(1), Some(2), None, None, Some(7), Some(8)),
        "MPI_Scatterv" => sig(None, Some(3), None, None, Some(7), Some(8)),
        "MPI_Allgatherv" => sig(Some(1), Some(2), None, None, None, Some(7)),
        "MPI_Alltoallv" => sig(None, Some(3), None, None, None, Some(8)),
        "MPI_Cart_create" | "MPI_Cart_shift" | "MPI_Cart_coords" | "MPI_Cart_rank" | "MPI_Comm_split"
        | "MPI_Dims_create" => sig(None, None, None, None, None, Some(0)),
        // P2PDC (instrument/p2pdc.h): P2Psend(peer, buf, bytes), P2Preceive(peer, buf, bytes), P2Pwait().
        "P2Psend" | "P2Preceive" => sig(Some(2), None, Some(0), None, None, None),
        "P2Pwait" => sig(None, None, None, None, None, None),
        // P2Pconverged(local) and P2Pallreduce(value, op): reductions over every peer (an epoch
        // exchange in the asynchronous schemes); P2Pbarrier(); P2Pset_scheme(scheme) switches the
        // scheme (collective: every peer calls it).
        "P2Pconverged" | "P2Pallreduce" | "P2Pbarrier" | "P2Pset_scheme" => sig(None, None, None, None, None, None),
        _ => return None,
    };
    Some(s)
}

/// A method of the MPI-2 C++ bindings on a communicator (`MPI::COMM_WORLD.Send(...)`) and the
/// C routine it wraps: the C name, how many of the C++ arguments come before the communicator,
/// and what fills the C arguments after it when the C++ call leaves them out (a status) or returns
/// them (a request). `Get_rank`/`Get_size` return the value MPI_Comm_rank/MPI_Comm_size write:
/// the front end's `MPI_Comm_rank(out)` value.
pub fn cxx_comm_method(method: &str) -> Option<(&'static str, usize, &'static [&'static str])> {
    const NONE: &[&str] = &[];
    const STATUS: &[&str] = &["MPI_STATUS_IGNORE"];
    const REQUEST: &[&str] = &["(request returned by the C++ binding)"];
    Some(match method {
        "Send" => ("MPI_Send", 5, NONE),
        "Ssend" => ("MPI_Ssend", 5, NONE),
        "Bsend" => ("MPI_Bsend", 5, NONE),
        "Rsend" => ("MPI_Rsend", 5, NONE),
        "Recv" => ("MPI_Recv", 5, STATUS),
        "Isend" => ("MPI_Isend", 5, REQUEST),
        "Issend" => ("MPI_Issend", 5, REQUEST),
        "Irecv" => ("MPI_Irecv", 5, REQUEST),
        "Sendrecv" => ("MPI_Sendrecv", 10, STATUS),
        "Sendrecv_replace" => ("MPI_Sendrecv_replace", 7, STATUS),
        "Probe" => ("MPI_Probe", 2, STATUS),
        "Barrier" => ("MPI_Barrier", 0, NONE),
        "Bcast" => ("MPI_Bcast", 4, NONE),
        "Reduce" => ("MPI_Reduce", 6, NONE),
        "Allreduce" => ("MPI_Allreduce", 5, NONE),
        "Scan" => ("MPI_Scan", 5, NONE),
        "Exscan" => ("MPI_Exscan", 5, NONE),
        "Gather" => ("MPI_Gather", 7, NONE),
        "Scatter" => ("MPI_Scatter", 7, NONE),
        "Allgather" => ("MPI_Allgather", 6, NONE),
        "Alltoall" => ("MPI_Alltoall", 6, NONE),
        "Gatherv" => ("MPI_Gatherv", 8, NONE),
        "Scatterv" => ("MPI_Scatterv", 8, NONE),
        "Allgatherv" => ("MPI_Allgatherv", 7, NONE),
        "Alltoallv" => ("MPI_Alltoallv", 9, NONE),
        "Get_rank" => ("MPI_Comm_rank(out)", 0, NONE),
        "Get_size" => ("MPI_Comm_size(out)", 0, NONE),
        _ => return None,
    })
}

/// A name of the C++ bindings' namespace as its C name: `MPI::INT` is MPI_INT, `MPI::Init`
/// MPI_Init, `MPI::COMM_WORLD` MPI_COMM_WORLD.
pub fn cxx_name(qualified: &str) -> Option<String> {
    let rest = qualified.strip_prefix("MPI::")?;
    (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then(|| format!("MPI_{rest}"))
}

/// Integer constants of mpi.h that programs compare against or pass as peers (OpenMPI's values).
pub const CONSTANTS: &[(&str, i128)] = &[
    ("MPI_PROC_NULL", -2),
    ("MPI_ANY_SOURCE", -1),
    ("MPI_ANY_TAG", -1),
    ("MPI_ROOT", -4),
    ("MPI_UNDEFINED", -32766),
    ("MPI_KEYVAL_INVALID", -1),
    ("MPI_CART", 1),
    ("MPI_GRAPH", 2),
    ("MPI_DIST_GRAPH", 3),
    ("MPI_IDENT", 0),
    ("MPI_CONGRUENT", 1),
    ("MPI_SIMILAR", 2),
    ("MPI_UNEQUAL", 3),
    ("MPI_THREAD_SINGLE", 0),
    ("MPI_THREAD_FUNNELED", 1),
    ("MPI_THREAD_SERIALIZED", 2),
    ("MPI_THREAD_MULTIPLE", 3),
    ("MPI_MAX_PROCESSOR_NAME", 256),
    ("MPI_MAX_ERROR_STRING", 256),
    ("MPI_MAX_OBJECT_NAME", 64),
    ("MPI_MAX_LIBRARY_VERSION_STRING", 256),
    ("MPI_BSEND_OVERHEAD", 128),
];

/// Size in bytes of a predefined MPI datatype.
pub fn datatype_size(name: &str) -> Option<i128> {
    Some(match name {
        "MPI_CHAR" | "MPI_SIGNED_CHAR" | "MPI_UNSIGNED_CHAR" | "MPI_BYTE" | "MPI_INT8_T" | "MPI_UINT8_T"
        | "MPI_C_BOOL" | "MPI_PACKED" => 1,
        "MPI_SHORT" | "MPI_UNSIGNED_SHORT" | "MPI_INT16_T" | "MPI_UINT16_T" => 2,
        "MPI_INT" | "MPI_UNSIGNED" | "MPI_FLOAT" | "MPI_INT32_T" | "MPI_UINT32_T" => 4,
        "MPI_LONG" | "MPI_UNSIGNED_LONG" | "MPI_LONG_LONG" | "MPI_LONG_LONG_INT" | "MPI_UNSIGNED_LONG_LONG"
        | "MPI_DOUBLE" | "MPI_INT64_T" | "MPI_UINT64_T" | "MPI_AINT" | "MPI_OFFSET" => 8,
        // Pair types: the sum of their members' sizes (what MPI_Type_size gives, padding left
        // out), as OpenMPI reports them.
        "MPI_2INT" | "MPI_FLOAT_INT" | "MPI_C_COMPLEX" | "MPI_C_FLOAT_COMPLEX" | "MPI_COMPLEX" | "MPI_2REAL"
        | "MPI_2INTEGER" => 8,
        "MPI_SHORT_INT" => 6,
        "MPI_DOUBLE_INT" | "MPI_LONG_INT" => 12,
        "MPI_LONG_DOUBLE" | "MPI_C_DOUBLE_COMPLEX" | "MPI_DOUBLE_COMPLEX" | "MPI_2DOUBLE_PRECISION" => 16,
        "MPI_LONG_DOUBLE_INT" => 20,
        "MPI_C_LONG_DOUBLE_COMPLEX" => 32,
        _ => return None,
    })
}

/// MPI routines that are neither communication nor cost worth counting.
pub fn is_mpi_bookkeeping(name: &str) -> bool {
    name.starts_with("MPI_") || name.starts_with("PMPI_")
}

/// The collectives a communicator constructor runs over its parent in OpenMPI 4.1 (ompi/
/// communicator): splits first gather every member's colour and key (an allgather of two ints:
/// MPI_Comm_split, MPI_Comm_split_type, MPI_Cart_sub); every constructor then agrees on a context
/// id (a nonblocking allreduce of one int, MAX, then one of a flag, MIN) and activates the
/// communicator (one more, MIN). The members synchronise there, so the simulation replays them
/// (allgather bytes per rank, allreduces of 4 bytes), beside the comm_create op the process's
/// own work costs. The constructors the trace runtime wraps; None for the others (an
/// intercommunicator's, MPI_Comm_create_group's over the group alone, graph topologies).
pub fn constructor_collectives(name: &str) -> Option<(Option<u64>, u32)> {
    match name {
        "MPI_Comm_split" | "MPI_Comm_split_type" | "MPI_Cart_sub" => Some((Some(8), 3)),
        "MPI_Comm_dup" | "MPI_Comm_create" | "MPI_Cart_create" => Some((None, 3)),
        _ => None,
    }
}

/// MPI routines that make a communicator: collective over the parent (every member's call
/// counts in its sequence), and each costs its process an op (`ctor_op`; the messages over
/// the parent are not simulated).
pub fn makes_comm(name: &str) -> bool {
    matches!(
        name,
        "MPI_Comm_split"
            | "MPI_Comm_split_type"
            | "MPI_Comm_create"
            | "MPI_Comm_create_group"
            | "MPI_Comm_dup"
            | "MPI_Comm_dup_with_info"
            | "MPI_Comm_idup"
            | "MPI_Intercomm_create"
            | "MPI_Intercomm_merge"
            | "MPI_Cart_create"
            | "MPI_Cart_sub"
            | "MPI_Graph_create"
            | "MPI_Dist_graph_create"
            | "MPI_Dist_graph_create_adjacent"
    )
}

/// The op a constructor call costs its process: `comm_null` for a split whose colour is the
/// constant MPI_UNDEFINED (it makes no communicator: 0.9-1.2 us at 1 rank against 2.8-3.4 us
/// for one made and freed), `comm_create` for the others.
pub fn ctor_op(name: &str, colour: Option<&str>) -> crate::model::ops::OpClass {
    use crate::model::ops::OpClass;
    match (name, colour.map(str::trim)) {
        ("MPI_Comm_split" | "MPI_Comm_split_type", Some("MPI_UNDEFINED")) => OpClass::CommNull,
        _ => OpClass::CommCreate,
    }
}
