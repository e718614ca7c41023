//! RoCEv2 over lossless Ethernet: the pieces of the RDMA fabric the DCQCN paper
//! (SIGCOMM 2015) describes. So far its congestion control, [`dcqcn`]; PFC, the
//! reliable-connection transport with go-back-N and the fluid model follow (issue 26).

pub mod dcqcn;
