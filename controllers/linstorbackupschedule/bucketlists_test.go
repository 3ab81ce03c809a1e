package linstorbackupschedule

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// A schedule gone without its finalizer running (removed by hand) leaves no kept list
// behind: Reconcile's NotFound forgets by name, whatever UIDs it had.
func TestKeptBucketListsAreForgottenByName(t *testing.T) {
	r := &Reconciler{}
	schedule := func(name, uid string) *linstorv1.LinstorBackupSchedule {
		return &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "linstor", Name: name, UID: types.UID(uid)}}
	}
	r.keepBucketList(schedule("nightly", "old"), keptBucketList{remote: "offsite"})
	r.keepBucketList(schedule("nightly", "new"), keptBucketList{remote: "offsite"})
	r.keepBucketList(schedule("hourly", "other"), keptBucketList{remote: "offsite"})
	r.forgetBucketLists(types.NamespacedName{Namespace: "linstor", Name: "nightly"})
	if len(r.bucketLists) != 1 || r.keptBucketList("other", "offsite").remote != "offsite" {
		t.Errorf("kept lists %v: want only hourly's", r.bucketLists)
	}
}
