/* The SimGrid C API surface that mpicast binds (see build.rs for the allowlist). */
#include <simgrid/engine.h>
#include <simgrid/actor.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <simgrid/comm.h>
#include <simgrid/exec.h>
#include <simgrid/barrier.h>
#include <simgrid/plugins/load.h>
#include <xbt/config.h>
#include <xbt/log.h>
#include <xbt/dynar.h>
