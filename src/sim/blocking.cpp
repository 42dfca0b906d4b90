// Blocking receives and sends in one simcall each. SimGrid 3.32's C API starts a comm (a
// simcall) and then waits for it (another); s4u waits on a comm that was never started with a
// single simcall doing both (s4u::Comm::wait_for on an INITED comm), which only C++ reaches.
// The replay's blocking receives (MPI_Recv, every collective's receives) and rendezvous sends
// go through here.
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Mailbox.hpp>

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
