//! Failures of a two-node service: two `conformance-server` processes sharing a real
//! `redis-server` (each test its own, on a free port, without persistence unless it says so),
//! behind the in-process round-robin proxy, driven by a real barrel-mcp client. A node killed
//! mid-call and mid-task, and the node serving a GET stream killed; Redis restarted without and with its data, paused, and its pub/sub
//! connections cut; cancellations racing answers across nodes; and what is left in Redis and
//! in the nodes' memory after the work.

mod cancel;
mod get_stream;
mod harness;
mod killed;
mod leftovers;
mod redis;
mod redis_server;
