#ifndef ARCUS_CAVAHI_SHIM_H
#define ARCUS_CAVAHI_SHIM_H

// The parts of libavahi-client that ArcusLAN uses: a client on a threaded poll, an entry group
// to publish, a service browser and resolvers to discover.
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/simple-watch.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>

// Swift cannot call C variadic functions. The two in this API that matter take their TXT records
// as varargs (avahi_entry_group_add_service, avahi_string_list_new); ArcusLAN calls their
// list-taking twins instead (avahi_entry_group_add_service_strlst, avahi_string_list_add_arbitrary).

#endif
