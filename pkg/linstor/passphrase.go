package linstor

import (
	"context"
	"encoding/json"
	"fmt"
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
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("passphrase status: HTTP %d", resp.StatusCode)
	}
	var out []struct {
		Status PassphraseStatus `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out) == 0 {
		return "", fmt.Errorf("passphrase status: unexpected answer: %v", err)
	}
	return out[0].Status, nil
}
