#ifndef ARCUS_CBLUEZ_SHIM_H
#define ARCUS_CBLUEZ_SHIM_H

// The parts of BlueZ's headers that ArcusBluetooth uses: L2CAP sockets (sockaddr_l2, the
// SOL_BLUETOOTH options) for LE credit-based channels, and sockaddr_hci for the kernel's
// management socket (adverts and scanning, HCI_CHANNEL_CONTROL). No library function is called: the
// sockets are plain syscalls, so nothing here needs libbluetooth at run time.
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/l2cap.h>
#include <bluetooth/hci.h>

// Swift imports integer-literal macros (AF_BLUETOOTH, BTPROTO_L2CAP, SOL_BLUETOOTH, BT_SECURITY,
// BT_RCVMTU, BT_SNDMTU, BDADDR_LE_PUBLIC) but not function-like or compound-literal ones: these
// wrap the few that ArcusBluetooth needs.

// Host to Bluetooth (little-endian) byte order, for sockaddr_l2's PSM and CID.
static inline uint16_t arcus_htobs(uint16_t value) { return htobs(value); }
static inline uint16_t arcus_btohs(uint16_t value) { return btohs(value); }

// The wildcard address: bind on whichever adapter the kernel picks.
static inline bdaddr_t arcus_bdaddr_any(void) { return *BDADDR_ANY; }

#endif
