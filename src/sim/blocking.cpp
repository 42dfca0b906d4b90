// Blocking receives and sends in one simcall each. SimGrid 3.32's C API starts a comm (a
// simcall) and then waits for it (another); s4u waits on a comm that was never started with a
// single simcall doing both (s4u::Comm::wait_for on an INITED comm), which only C++ reaches.
// The replay's blocking receives (MPI_Recv, every collective's receives) and rendezvous sends
// go through here, and its executions, in two simcalls where sg_actor_execute takes five.
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/simix.hpp>

extern "C" void* mpicast_mailbox_recv(sg_mailbox_t mailbox)
{
  void* data = nullptr;
  mailbox->get_init()->set_dst_data(&data, sizeof data)->wait();
  return data;
}

extern "C" void mpicast_mailbox_send(sg_mailbox_t mailbox, void* payload, uint64_t bytes)
{
  mailbox->put_init()->set_payload_size(bytes)->set_src_data(payload)->wait();
}

// this_actor::execute sets the amount, the host and the priority and starts the exec, each in a
// simcall of its own, then waits (a fifth). Here one simcall runs the first four in the
// maestro, where s4u calls them directly, and the wait is the second. The exec is made in the
// actor: the kernel lists it under whoever creates it, and removes it from that list by a
// linear scan (made in the maestro, every rank's execs were in one list: 30% slower).
extern "C" void mpicast_execute(double flops)
{
  simgrid::s4u::Host* host = simgrid::s4u::this_actor::get_host();
  simgrid::s4u::ExecPtr exec = simgrid::s4u::Exec::init();
  simgrid::kernel::actor::simcall_answered(
      [&exec, host, flops] { exec->set_flops_amount(flops)->set_host(host)->vetoable_start(); });
  exec->wait();
}

// The actor a mailbox's sends are for from the start (s4u's permanent receiver; null: none): a
// send to it is transferred at once, whether or not a receive is posted (MPI's eager protocol).
extern "C" void mpicast_mailbox_set_receiver(sg_mailbox_t mailbox, sg_actor_t actor)
{
  mailbox->set_receiver(simgrid::s4u::ActorPtr(actor));
}
