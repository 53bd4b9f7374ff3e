package kafka

import (
	"fmt"
	"strings"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// maxTopicLen is the longest topic name Kafka accepts.
const maxTopicLen = 249

// topicFunc names a tenant's topic: a naming.Func, which must be injective
// (two tenants never share a topic) and return a valid topic name (an
// invalid name fails the call closed), or tenantTopic, injective by
// construction.
type topicFunc func(tenancy.ID) (string, error)

// tenantTopic is naming.PerTenant's topic: prefix followed by the
// tenant's 32 lowercase hex digits. The suffix has a fixed length and uses
// neither '.' nor '_', so names of one prefix never collide, not even in
// Kafka's metric names (where '.' and '_' are the same character).
func tenantTopic(prefix string) topicFunc {
	return func(id tenancy.ID) (string, error) {
		if id.IsZero() {
			return "", tenancy.Unbound()
		}
		return prefix + id.Hex(), nil
	}
}

// topicSpace is the shape of tenantTopic's names under any prefix, and
// groupSpace that of a sharded consumer's groups: a static name of either
// shape could be some tenant's.
var (
	topicSpace = floors.TenantSpace{}
	groupSpace = floors.TenantSpace{Sep: "."}
)

// validTopic reports whether name is a legal Kafka topic name:
// 1 to 249 of [a-zA-Z0-9._-], and neither "." nor "..".
func validTopic(name string) error {
	if name == "" || len(name) > maxTopicLen {
		return fmt.Errorf("kafka: topic name must be 1 to %d characters, got %d", maxTopicLen, len(name))
	}
	if name == "." || name == ".." {
		return fmt.Errorf("kafka: topic name %q is reserved", name)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return !topicChar(r) }); i >= 0 {
		return fmt.Errorf("kafka: topic name %q has a character outside [a-zA-Z0-9._-] at %d", name, i)
	}
	return nil
}

// validPrefix reports whether prefix can start tenantTopic names.
func validPrefix(prefix string) error {
	if len(prefix)+32 > maxTopicLen {
		return fmt.Errorf("kafka: topic prefix %q is longer than %d characters", prefix, maxTopicLen-32)
	}
	for i, r := range prefix {
		if !topicChar(r) {
			return fmt.Errorf("kafka: topic prefix %q has a character outside [a-zA-Z0-9._-] at %d", prefix, i)
		}
	}
	return nil
}

func topicChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// metricName is how Kafka compares topics for metric collisions.
func metricName(topic string) string { return strings.ReplaceAll(topic, ".", "_") }
