package rest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Fields that Flink 2.3's own client (flink-clients' RestClusterClient and
// the response classes it parses with a strict JSON mapper) requires in
// GET /jobs/:jobid, although Weir has nothing to say in them. Without any
// one of them the client cannot parse the answer and retries until it
// times out. TestFlinkCLI runs that client against Weir.

// emptyJSONObject is Plan nodes' optimizer_properties.
var emptyJSONObject = json.RawMessage(`{}`)

// withFlinkClientFields fills what d leaves empty of the fields above. It
// copies what it changes: d's slices belong to the Cluster (the caller has
// already copied d.Vertices).
func withFlinkClientFields(d JobDetails) JobDetails {
	if d.JobType == "" {
		d.JobType = JobTypeStreaming
	}
	group := ""
	for i := range d.Vertices {
		if d.Vertices[i].SlotSharingGroupID == "" {
			if group == "" {
				group = defaultSlotSharingGroupID(d.ID)
			}
			d.Vertices[i].SlotSharingGroupID = group
		}
	}
	nodes := make([]PlanNode, len(d.Plan.Nodes))
	copy(nodes, d.Plan.Nodes)
	for i := range nodes {
		if nodes[i].OptimizerProperties == nil {
			nodes[i].OptimizerProperties = emptyJSONObject
		}
	}
	d.Plan.Nodes = nodes
	return d
}

// defaultSlotSharingGroupID is the id of the one slot-sharing group of a
// job's vertices: 32 hex characters, like Flink's random group ids, but
// derived from the job id so that every answer about a job gives the same.
func defaultSlotSharingGroupID(jobID string) string {
	sum := sha256.Sum256([]byte("weir default slot sharing group of job " + jobID))
	return hex.EncodeToString(sum[:JobIDLen/2])
}
