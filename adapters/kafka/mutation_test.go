package kafka

// Tests that pin down the prefix bound mutation testing found unchecked
// (make mutate; docs/reliability.md).

import (
	"strings"
	"testing"
)

// The longest prefix leaves exactly room for the 32 hex digits.
func TestValidPrefixBound(t *testing.T) {
	longest := strings.Repeat("p", maxTopicLen-32)
	if err := validPrefix(longest); err != nil {
		t.Fatalf("a %d-character prefix refused: %v", len(longest), err)
	}
	err := validPrefix(longest + "p")
	if err == nil {
		t.Fatalf("a %d-character prefix accepted", len(longest)+1)
	}
	if !strings.Contains(err.Error(), "is longer than 217 characters") {
		t.Fatalf("error %q does not name the limit", err)
	}
	if err := validPrefix("orders/"); err == nil || !strings.Contains(err.Error(), "at 6") {
		t.Fatalf("prefix with '/' at 6: %v", err)
	}
}

// The position of the first bad character is reported.
func TestValidTopicNamesTheBadCharacter(t *testing.T) {
	if err := validTopic("ab c"); err == nil || !strings.Contains(err.Error(), "at 2") {
		t.Fatalf("validTopic(%q) = %v, want the position 2", "ab c", err)
	}
}

// Every edge of every allowed range is in, its neighbours out.
func TestTopicCharEdges(t *testing.T) {
	for _, r := range "azAZ09._-" {
		if !topicChar(r) {
			t.Errorf("%q refused", r)
		}
	}
	for _, r := range "`{@[/:" {
		if topicChar(r) {
			t.Errorf("%q accepted", r)
		}
	}
}
