package linstor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	lapi "github.com/LINBIT/golinstor/client"
)

// PassphraseStatus is LINSTOR's view of the master passphrase: unset, locked, unlocked.
type PassphraseStatus string

const (
	PassphraseUnset    PassphraseStatus = "unset"
	PassphraseLocked   PassphraseStatus = "locked"
	PassphraseUnlocked PassphraseStatus = "unlocked"
)

// maxStatusBody bounds what is read of the status answer (a few bytes in practice).
const maxStatusBody = 64 << 10

// GetPassphraseStatus asks GET /v1/encryption/passphrase, which golinstor lacks.
func GetPassphraseStatus(ctx context.Context, lc *lapi.Client, hc *http.Client) (PassphraseStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, lc.BaseURL().JoinPath("/v1/encryption/passphrase").String(), nil)
	if err != nil {
		return "", err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return "", fmt.Errorf("passphrase status: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("passphrase status: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return ParsePassphraseStatus(body)
}

// ParsePassphraseStatus reads the status answer. LINSTOR sends one object
// (rest/v1/Encryption.passphraseStatus); the OpenAPI spec declares a list of them, so
// both are accepted. Anything else is an error, never a guess: a wrong "unset" would
// make the operator create a passphrase.
func ParsePassphraseStatus(body []byte) (PassphraseStatus, error) {
	type entry struct {
		Status PassphraseStatus `json:"status"`
	}
	var one entry
	if err := json.Unmarshal(body, &one); err != nil {
		var list []entry
		if err := json.Unmarshal(body, &list); err != nil || len(list) != 1 {
			return "", fmt.Errorf("passphrase status: unexpected answer %q", truncate(body, 200))
		}
		one = list[0]
	}
	switch one.Status {
	case PassphraseUnset, PassphraseLocked, PassphraseUnlocked:
		return one.Status, nil
	}
	return "", fmt.Errorf("passphrase status: unknown status %q", one.Status)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
