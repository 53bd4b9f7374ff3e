package redis

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// crc16 is the CRC16-XMODEM Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// clusterSlot is Redis Cluster's slot of key: the CRC of the text between
// the first '{' and the next '}' when that is not empty (a hash tag), else
// of the whole key.
func clusterSlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) % 16384
}

// hostileUsers are user keys that would carry a hash tag if written raw.
var hostileUsers = []string{"{pin}", "{pin}1", "x{pin}y", "}{pin}", "{}{pin}", "{{pin}}", "%7Bpin%7D", "{"}

// A user key's braces never reach the key: every key hashes on its full
// name, for every tenant-carrying marker, so a hostile user key neither
// picks the slot nor makes two tenants' keys share one by construction.
func TestHostileBracesKeepTheFullKeySlot(t *testing.T) {
	if got := clusterSlot("123456789"); got != 0x31C3%16384 {
		t.Fatalf("crc16 check value: slot %d", got) // the XMODEM check value
	}
	if clusterSlot("tw:t:x:c:r:{pin}1") != clusterSlot("pin") {
		t.Fatal("clusterSlot does not honour a hash tag")
	}
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	b := tenancy.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")
	for _, m := range []string{"t", "dt", "d", "nt"} {
		for _, u := range hostileUsers {
			ka, kb := buildKey(m, "ns", a, 'c', "r", u), buildKey(m, "ns", b, 'c', "r", u)
			for _, k := range []string{ka, kb} {
				if clusterSlot(k) != crc16(k)%16384 {
					t.Errorf("key %q hashes on a tag, not on its full name", k)
				}
			}
			if ka == kb {
				t.Errorf("tenants share key %q", ka)
			}
		}
	}
}
