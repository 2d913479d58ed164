// The "ucx" transport: UCX (ucp) tagged messages between processes and hosts.
//
// Data moves with ucp_tag_send_nbx / ucp_tag_recv_nbx (UCX picks eager or rendezvous by
// size); RMA put is deliberately not used (UCX 1.13's put over TCP ran at ~45 MB/s at
// 64 MiB on these machines). Which UCX transports carry the bytes is UCX's choice under
// the usual UCX_TLS environment variable or the "TLS" config key:
//   UCX_TLS=tcp             TCP sockets (between hosts, network namespaces, loopback)
//   UCX_TLS=sm,self         shared memory between processes on one host (posix/sysv/cma)
//   UCX_TLS=posix,cma,self  the same, naming the shared-memory transports explicitly
//   (unset)                 all: shared memory on one host, rc/ud verbs where an RDMA
//                           device exists, TCP otherwise
// Connection setup starts out of band: the connecting side opens a TCP connection to the
// listener's HOST:PORT (the handshake). Param "connect" = "client-server" (the default when
// UCX_TLS is tcp or tcp,self): the listener answers with the port of its ucp_listener, the
// connecting side creates a sockaddr endpoint to it (sending its UCX client id) and the
// listener creates its endpoint from the matching connection request; UCX's client-server
// flow, whose TCP lanes connect endpoint to endpoint on the device the connection came in
// on (CM_USE_ALL_DEVICES=n unless set). "address" (the default with any other UCX_TLS, and
// the fallback when UCX has no ucp_listener): the two exchange ucp worker addresses and
// both create endpoints from them; over TCP, UCX 1.13 can abort a process inside that
// flow's connection logic when its peer dies while UCX connects
// (transport/README.md). Both work over loopback and across network namespaces.
// The TCP connection stays open as the peer's control connection: a watch thread fails
// the peer (PeerStatus() Unavailable, its endpoint force-closed so sends in flight
// complete) when it closes or its keep-alive fails, so a dead peer is seen over any UCX
// transport, shared memory included.
// Config keys (TransportConfig::params): any UCX config key without the UCX_ prefix
// ("TLS", "NET_DEVICES", ...) is passed to ucp_config_modify; a transport-level key also
// drops its transport's prefix ("RX_SEG_SIZE" for UCX_TCP_RX_SEG_SIZE). "err_mode" =
// "peer" (default: UCX's endpoint failures are reported too) or "none" (needed for
// UCX_TLS=sm,self; the control connection still detects a dead peer). "connect" = "client-server"
// or "address" (above). "listener_port": the port of Listen's ucp_listener (default 0, any;
// for firewalls; taken, Listen fails naming it). Unless params or the
// environment set them, TCP segments are 4 MiB (UCX: 8 KiB send, 64 KiB receive): 1 MiB puts over
// TCP ran ~1.4x faster. UCX aborts a process that receives a segment larger than its own, so the
// handshake (since version 2) carries both sizes and refuses a peer whose sizes differ
// (FailedPrecondition naming them). Progress: one owner of the ucp worker at a time (a lock). A
// thread waiting on a handle or in WaitForCompletion takes it and drives ucp_worker_progress itself
// until its operation completes (completions fire on it); the transport's progress thread stands
// aside while such drivers are active (and for 50 us after), and otherwise owns the
// worker: it polls while operations are pending and for 2 ms after the last event, then
// sleeps on the worker's event fd (ucp_worker_arm); a long_wait receive alone (a server's
// standing receive) lets an owner sleep. PostSend/PostRecv/cancel post directly when the
// worker is free, else queue a command for its owner (one short lock, and a write to an
// eventfd only when the owner sleeps). Connect, Listen's accepts and Disconnect create and
// close endpoints the same way and wait for it.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include "transport/transport.h"

namespace switchyard::transport {

void RegisterUcxTransport(TransportRegistry& registry);

}  // namespace switchyard::transport
