#ifndef ARCUS_CNATS_SHIM_H
#define ARCUS_CNATS_SHIM_H

// libnats (the NATS C client), for the cloud relay: a connection with its reconnect logic,
// core publish/subscribe, and JetStream streams and consumers for store-and-forward.
#include <nats/nats.h>

#endif
