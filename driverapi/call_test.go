package driverapi_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/purelifecycle/machine/driverapi"
)

// recordingDriver records the last request of each method and answers with
// the configured response and error.
type recordingDriver struct {
	calls int
	err   error

	createReq  *driverapi.CreateMachineRequest
	createResp *driverapi.CreateMachineResponse
	initReq    *driverapi.InitializeMachineRequest
	initResp   *driverapi.InitializeMachineResponse
	statusReq  *driverapi.GetMachineStatusRequest
	statusResp *driverapi.GetMachineStatusResponse
	deleteReq  *driverapi.DeleteMachineRequest
	deleteResp *driverapi.DeleteMachineResponse
	listReq    *driverapi.ListMachinesRequest
	listResp   *driverapi.ListMachinesResponse
	volReq     *driverapi.GetVolumeIDsRequest
	volResp    *driverapi.GetVolumeIDsResponse
	updateReq  *driverapi.UpdateMachineRequest
	updateResp *driverapi.UpdateMachineResponse
	metaReq    *driverapi.UpdateMetadataRequest
	metaResp   *driverapi.UpdateMetadataResponse
}

var _ driverapi.Driver = (*recordingDriver)(nil)

func (d *recordingDriver) CreateMachine(_ context.Context, r *driverapi.CreateMachineRequest) (*driverapi.CreateMachineResponse, error) {
	d.calls++
	d.createReq = r
	return d.createResp, d.err
}

func (d *recordingDriver) InitializeMachine(_ context.Context, r *driverapi.InitializeMachineRequest) (*driverapi.InitializeMachineResponse, error) {
	d.calls++
	d.initReq = r
	return d.initResp, d.err
}

func (d *recordingDriver) GetMachineStatus(_ context.Context, r *driverapi.GetMachineStatusRequest) (*driverapi.GetMachineStatusResponse, error) {
	d.calls++
	d.statusReq = r
	return d.statusResp, d.err
}

func (d *recordingDriver) DeleteMachine(_ context.Context, r *driverapi.DeleteMachineRequest) (*driverapi.DeleteMachineResponse, error) {
	d.calls++
	d.deleteReq = r
	return d.deleteResp, d.err
}

func (d *recordingDriver) ListMachines(_ context.Context, r *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	d.calls++
	d.listReq = r
	return d.listResp, d.err
}

func (d *recordingDriver) GetVolumeIDs(_ context.Context, r *driverapi.GetVolumeIDsRequest) (*driverapi.GetVolumeIDsResponse, error) {
	d.calls++
	d.volReq = r
	return d.volResp, d.err
}

func (d *recordingDriver) UpdateMachine(_ context.Context, r *driverapi.UpdateMachineRequest) (*driverapi.UpdateMachineResponse, error) {
	d.calls++
	d.updateReq = r
	return d.updateResp, d.err
}

func (d *recordingDriver) UpdateMetadata(_ context.Context, r *driverapi.UpdateMetadataRequest) (*driverapi.UpdateMetadataResponse, error) {
	d.calls++
	d.metaReq = r
	return d.metaResp, d.err
}

var (
	testRef   = driverapi.MachineRef{Name: "m1", UID: "uid-1", ProviderID: "aws:///eu-1/i-1", NodeName: "ip-10-0-0-1"}
	testClass = driverapi.Class{Name: "small", ProviderSpec: []byte(`{"type":"m5.large"}`), Secret: map[string][]byte{"key": []byte("s")}}
	testAddrs = []driverapi.Address{{Type: "InternalIP", Address: "10.0.0.1"}, {Type: "Hostname", Address: "ip-10-0-0-1"}}
)

func TestMethodStrings(t *testing.T) {
	for _, tc := range []struct {
		m     driverapi.Method
		want  string
		valid bool
	}{
		{driverapi.MethodNone, "none", false},
		{driverapi.MethodCreate, "CreateMachine", true},
		{driverapi.MethodInitialize, "InitializeMachine", true},
		{driverapi.MethodGetStatus, "GetMachineStatus", true},
		{driverapi.MethodDelete, "DeleteMachine", true},
		{driverapi.MethodList, "ListMachines", true},
		{driverapi.MethodGetVolumeIDs, "GetVolumeIDs", true},
		{driverapi.MethodUpdate, "UpdateMachine", true},
		{driverapi.MethodUpdateMetadata, "UpdateMetadata", true},
		{driverapi.Method(9), "Method(9)", false},
		{driverapi.Method(200), "Method(200)", false},
	} {
		require.Equal(t, tc.want, tc.m.String())
		require.Equal(t, tc.valid, tc.m.Valid(), tc.want)
	}
}

func TestIdempotencyKey(t *testing.T) {
	for _, tc := range []struct {
		uid     string
		attempt uint32
		want    string
	}{
		{"uid-1", 0, "uid-1/0"},
		{"uid-1", 3, "uid-1/3"},
		{"6f1c9a2e-0000-4000-8000-000000000001", 4294967295, "6f1c9a2e-0000-4000-8000-000000000001/4294967295"},
		{"", 7, ""},
	} {
		c := driverapi.Call{Machine: driverapi.MachineRef{Name: "m", UID: tc.uid}, Attempt: tc.attempt}
		require.Equal(t, tc.want, c.IdempotencyKey())
	}
}

func TestUnimplementedDriverAnswersUnimplementedEverywhere(t *testing.T) {
	var d driverapi.Driver = driverapi.UnimplementedDriver{}
	ctx := context.Background()
	errs := map[driverapi.Method]error{}
	var err error
	_, err = d.CreateMachine(ctx, &driverapi.CreateMachineRequest{})
	errs[driverapi.MethodCreate] = err
	_, err = d.InitializeMachine(ctx, &driverapi.InitializeMachineRequest{})
	errs[driverapi.MethodInitialize] = err
	_, err = d.GetMachineStatus(ctx, &driverapi.GetMachineStatusRequest{})
	errs[driverapi.MethodGetStatus] = err
	_, err = d.DeleteMachine(ctx, &driverapi.DeleteMachineRequest{})
	errs[driverapi.MethodDelete] = err
	_, err = d.ListMachines(ctx, &driverapi.ListMachinesRequest{})
	errs[driverapi.MethodList] = err
	_, err = d.GetVolumeIDs(ctx, &driverapi.GetVolumeIDsRequest{})
	errs[driverapi.MethodGetVolumeIDs] = err
	_, err = d.UpdateMachine(ctx, &driverapi.UpdateMachineRequest{})
	errs[driverapi.MethodUpdate] = err
	_, err = d.UpdateMetadata(ctx, &driverapi.UpdateMetadataRequest{})
	errs[driverapi.MethodUpdateMetadata] = err
	require.Len(t, errs, 8)
	for m, err := range errs {
		require.Equal(t, driverapi.Unimplemented, driverapi.CodeOf(err), m.String())
		require.ErrorIs(t, err, &driverapi.StatusError{Code: driverapi.Unimplemented})
		require.Contains(t, err.Error(), m.String())

		r := driverapi.Invoke(ctx, d, driverapi.Call{Method: m, Machine: testRef}, testClass)
		require.Equal(t, m, r.Method)
		require.Equal(t, driverapi.Unimplemented, r.Code)
		require.False(t, r.Undecodable)
		require.False(t, r.OK())
	}
}

// partialDriver embeds UnimplementedDriver and overrides one method.
type partialDriver struct{ driverapi.UnimplementedDriver }

func (partialDriver) ListMachines(context.Context, *driverapi.ListMachinesRequest) (*driverapi.ListMachinesResponse, error) {
	return &driverapi.ListMachinesResponse{Instances: []driverapi.Instance{{ProviderID: "p", MachineName: "m", OwnerUID: "u"}}}, nil
}

func TestEmbeddingUnimplementedDriverKeepsOverrides(t *testing.T) {
	ctx := context.Background()
	var d driverapi.Driver = partialDriver{}
	r := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodList}, testClass)
	require.True(t, r.OK())
	require.Equal(t, []driverapi.Instance{{ProviderID: "p", MachineName: "m", OwnerUID: "u"}}, r.Instances)
	r = driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodInitialize, Machine: testRef}, testClass)
	require.Equal(t, driverapi.Unimplemented, r.Code)
}

func TestInvokeBuildsRequestsAndCopiesResponses(t *testing.T) {
	ctx := context.Background()
	meta := map[string]string{"owner": "uid-1", "team": "a"}
	volumes := []driverapi.Volume{{Name: "pv-1", Driver: "ebs.csi.aws.com", Handle: "vol-1"}}
	for _, tc := range []struct {
		name  string
		call  driverapi.Call
		setup func(d *recordingDriver)
		check func(t *testing.T, d *recordingDriver, r driverapi.Result)
	}{
		{
			name: "create",
			call: driverapi.Call{Method: driverapi.MethodCreate, Machine: driverapi.MachineRef{Name: "m1", UID: "uid-1"},
				Attempt: 2, Generation: 5, Metadata: meta},
			setup: func(d *recordingDriver) {
				d.createResp = &driverapi.CreateMachineResponse{ProviderID: "p1", NodeName: "n1", LastKnownState: "s1", Addresses: testAddrs}
			},
			check: func(t *testing.T, d *recordingDriver, r driverapi.Result) {
				require.Equal(t, &driverapi.CreateMachineRequest{Machine: driverapi.MachineRef{Name: "m1", UID: "uid-1"},
					IdempotencyKey: "uid-1/2", Generation: 5, Metadata: meta, Class: testClass}, d.createReq)
				require.Equal(t, driverapi.Result{Method: driverapi.MethodCreate, ProviderID: "p1", NodeName: "n1",
					LastKnownState: "s1", Addresses: testAddrs}, r)
			},
		},
		{
			name: "initialize",
			call: driverapi.Call{Method: driverapi.MethodInitialize, Machine: testRef, Attempt: 9},
			setup: func(d *recordingDriver) {
				d.initResp = &driverapi.InitializeMachineResponse{ProviderID: "p1", NodeName: "n1", Addresses: testAddrs}
			},
			check: func(t *testing.T, d *recordingDriver, r driverapi.Result) {
				require.Equal(t, &driverapi.InitializeMachineRequest{Machine: testRef, Class: testClass}, d.initReq)
				require.Equal(t, driverapi.Result{Method: driverapi.MethodInitialize, ProviderID: "p1", NodeName: "n1", Addresses: testAddrs}, r)
			},
		},
		{
			name: "get status",
			call: driverapi.Call{Method: driverapi.MethodGetStatus, Machine: testRef, Attempt: 1},
			setup: func(d *recordingDriver) {
				d.statusResp = &driverapi.GetMachineStatusResponse{ProviderID: "p1", NodeName: "n1", OwnerUID: "uid-1",
					Addresses: testAddrs, Metadata: meta, Generation: 4}
			},
			check: func(t *testing.T, d *recordingDriver, r driverapi.Result) {
				require.Equal(t, &driverapi.GetMachineStatusRequest{Machine: testRef, IdempotencyKey: "uid-1/1", Class: testClass}, d.statusReq)
				require.Equal(t, driverapi.Result{Method: driverapi.MethodGetStatus, ProviderID: "p1", NodeName: "n1",
					OwnerUID: "uid-1", Addresses: testAddrs, Metadata: meta, Generation: 4}, r)
			},
		},
		{
			name: "delete",
			call: driverapi.Call{Method: driverapi.MethodDelete, Machine: testRef, Attempt: 1, LastKnownState: "old"},
			setup: func(d *recordingDriver) {
				d.deleteResp = &driverapi.DeleteMachineResponse{LastKnownState: "new"}
			},
			check: func(t *testing.T, d *recordingDriver, r driverapi.Result) {
				require.Equal(t, &driverapi.DeleteMachineRequest{Machine: testRef, IdempotencyKey: "uid-1/1",
					LastKnownState: "old", Class: testClass}, d.deleteReq)
				require.Equal(t, driverapi.Result{Method: driverapi.MethodDelete, LastKnownState: "new"}, r)
			},
		},
		{
			name: "list",
			call: driverapi.Call{Method: driverapi.MethodList},
			setup: func(d *recordingDriver) {
				d.listResp = &driverapi.ListMachinesResponse{Instances: []driverapi.Instance{{ProviderID: "p1", MachineName: "m1", OwnerUID: "uid-1"}}}
			},
			check: func(t *testing.T, d *recordingDriver, r driverapi.Result) {
				require.Equal(t, &driverapi.ListMachinesRequest{Class: testClass}, d.listReq)
				require.Equal(t, driverapi.Result{Method: driverapi.MethodList,
					Instances: []driverapi.Instance{{ProviderID: "p1", MachineName: "m1", OwnerUID: "uid-1"}}}, r)
			},
		},
		{
			name: "get volume IDs",
			call: driverapi.Call{Method: driverapi.MethodGetVolumeIDs, Volumes: volumes},
			setup: func(d *recordingDriver) {
				d.volResp = &driverapi.GetVolumeIDsResponse{VolumeIDs: []string{"vol-1"}}
			},
			check: func(t *testing.T, d *recordingDriver, r driverapi.Result) {
				require.Equal(t, &driverapi.GetVolumeIDsRequest{Volumes: volumes, Class: testClass}, d.volReq)
				require.Equal(t, driverapi.Result{Method: driverapi.MethodGetVolumeIDs, VolumeIDs: []string{"vol-1"}}, r)
			},
		},
		{
			name: "update",
			call: driverapi.Call{Method: driverapi.MethodUpdate, Machine: testRef, Generation: 7},
			setup: func(d *recordingDriver) {
				d.updateResp = &driverapi.UpdateMachineResponse{Generation: 7}
			},
			check: func(t *testing.T, d *recordingDriver, r driverapi.Result) {
				require.Equal(t, &driverapi.UpdateMachineRequest{Machine: testRef, Generation: 7, Class: testClass}, d.updateReq)
				require.Equal(t, driverapi.Result{Method: driverapi.MethodUpdate, Generation: 7}, r)
			},
		},
		{
			name: "update metadata",
			call: driverapi.Call{Method: driverapi.MethodUpdateMetadata, Machine: testRef, Metadata: meta, Remove: []string{"old"}},
			setup: func(d *recordingDriver) {
				d.metaResp = &driverapi.UpdateMetadataResponse{}
			},
			check: func(t *testing.T, d *recordingDriver, r driverapi.Result) {
				require.Equal(t, &driverapi.UpdateMetadataRequest{Machine: testRef, Set: meta, Remove: []string{"old"}, Class: testClass}, d.metaReq)
				require.Equal(t, driverapi.Result{Method: driverapi.MethodUpdateMetadata}, r)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &recordingDriver{}
			tc.setup(d)
			r := driverapi.Invoke(ctx, d, tc.call, testClass)
			require.Equal(t, 1, d.calls)
			require.True(t, r.OK())
			require.NoError(t, r.Err())
			tc.check(t, d, r)
		})
	}
	require.Equal(t, map[string]string{"owner": "uid-1", "team": "a"}, meta, "Invoke must not mutate the call")
}

func TestInvokeCopiesResponseReturnedWithAnError(t *testing.T) {
	ctx := context.Background()
	t.Run("GetMachineStatus Uninitialized with the instance", func(t *testing.T) {
		d := &recordingDriver{
			err:        driverapi.Error(driverapi.Uninitialized, "network not configured"),
			statusResp: &driverapi.GetMachineStatusResponse{ProviderID: "p1", NodeName: "n1", OwnerUID: "uid-1"},
		}
		r := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: testRef}, testClass)
		require.Equal(t, driverapi.Result{Method: driverapi.MethodGetStatus, Code: driverapi.Uninitialized,
			Message: "network not configured", Text: "machine codes error: code = [Uninitialized] message = [network not configured]",
			ProviderID: "p1", NodeName: "n1", OwnerUID: "uid-1"}, r)
		require.False(t, r.OK())
	})
	t.Run("CreateMachine failure with LastKnownState", func(t *testing.T) {
		d := &recordingDriver{
			err:        driverapi.Error(driverapi.ResourceExhausted, "no capacity"),
			createResp: &driverapi.CreateMachineResponse{LastKnownState: "nic-1 created"},
		}
		r := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodCreate, Machine: testRef}, testClass)
		require.Equal(t, driverapi.ResourceExhausted, r.Code)
		require.Equal(t, "nic-1 created", r.LastKnownState)
	})
	t.Run("DeleteMachine undecodable failure with LastKnownState", func(t *testing.T) {
		d := &recordingDriver{
			err:        errors.New("disk [d-1] still attached"),
			deleteResp: &driverapi.DeleteMachineResponse{LastKnownState: "vm gone, disk left"},
		}
		r := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodDelete, Machine: testRef}, testClass)
		require.Equal(t, driverapi.Result{Method: driverapi.MethodDelete, Code: driverapi.Unknown, Undecodable: true,
			Message: "disk [d-1] still attached", Text: "disk [d-1] still attached", LastKnownState: "vm gone, disk left"}, r)
	})
	t.Run("error without response leaves fields empty", func(t *testing.T) {
		d := &recordingDriver{err: driverapi.Error(driverapi.NotFound, "no vm")}
		r := driverapi.Invoke(ctx, d, driverapi.Call{Method: driverapi.MethodGetStatus, Machine: testRef}, testClass)
		require.Equal(t, driverapi.Result{Method: driverapi.MethodGetStatus, Code: driverapi.NotFound, Message: "no vm",
			Text: "machine codes error: code = [NotFound] message = [no vm]"}, r)
	})
	t.Run("nil response and nil error is an empty OK", func(t *testing.T) {
		r := driverapi.Invoke(ctx, &recordingDriver{}, driverapi.Call{Method: driverapi.MethodUpdate, Machine: testRef}, testClass)
		require.Equal(t, driverapi.Result{Method: driverapi.MethodUpdate}, r)
	})
}

func TestInvokeRefusesInvalidMethodsAndNilDriver(t *testing.T) {
	ctx := context.Background()
	for _, m := range []driverapi.Method{driverapi.MethodNone, driverapi.Method(9), driverapi.Method(255)} {
		d := &recordingDriver{}
		r := driverapi.Invoke(ctx, d, driverapi.Call{Method: m, Machine: testRef}, testClass)
		require.Equal(t, 0, d.calls)
		require.Equal(t, m, r.Method)
		require.Equal(t, driverapi.InvalidArgument, r.Code)
		require.False(t, r.Undecodable)
		require.Contains(t, r.Message, m.String())
	}
	r := driverapi.Invoke(ctx, nil, driverapi.Call{Method: driverapi.MethodCreate}, testClass)
	require.Equal(t, driverapi.InvalidArgument, r.Code)
	require.Equal(t, driverapi.MethodCreate, r.Method)
}

func TestResultOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want driverapi.Result
	}{
		{"nil", nil, driverapi.Result{Method: driverapi.MethodDelete}},
		{"status error", driverapi.Error(driverapi.Aborted, "conflict"),
			driverapi.Result{Method: driverapi.MethodDelete, Code: driverapi.Aborted, Message: "conflict",
				Text: "machine codes error: code = [Aborted] message = [conflict]"}},
		{"flattened status error", errors.New("rpc: machine codes error: code = [NotFound] message = [gone]"),
			driverapi.Result{Method: driverapi.MethodDelete, Code: driverapi.NotFound, Message: "gone",
				Text: "rpc: machine codes error: code = [NotFound] message = [gone]"}},
		{"foreign error", io.EOF,
			driverapi.Result{Method: driverapi.MethodDelete, Code: driverapi.Unknown, Undecodable: true, Message: "EOF", Text: "EOF"}},
		{"status error claiming OK", &driverapi.StatusError{Code: driverapi.OK, Message: "odd"},
			driverapi.Result{Method: driverapi.MethodDelete, Code: driverapi.Unknown, Undecodable: true,
				Message: "machine codes error: code = [OK] message = [odd]", Text: "machine codes error: code = [OK] message = [odd]"}},
		{"text claiming OK", errors.New("machine codes error: code = [OK] message = []"),
			driverapi.Result{Method: driverapi.MethodDelete, Code: driverapi.Unknown, Undecodable: true,
				Message: "machine codes error: code = [OK] message = []", Text: "machine codes error: code = [OK] message = []"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := driverapi.ResultOf(driverapi.MethodDelete, tc.err)
			require.Equal(t, tc.want, r)
			require.Equal(t, tc.err == nil, r.OK())
		})
	}
}

func TestResultErr(t *testing.T) {
	require.NoError(t, driverapi.Result{}.Err())
	require.NoError(t, driverapi.Result{Method: driverapi.MethodCreate, ProviderID: "p"}.Err())

	err := driverapi.Result{Code: driverapi.NotFound, Message: "gone"}.Err()
	var se *driverapi.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, driverapi.StatusError{Code: driverapi.NotFound, Message: "gone"}, *se)
	require.Equal(t, "machine codes error: code = [NotFound] message = [gone]", err.Error())

	require.Equal(t, "machine codes error: code = [NotFound] message = [gone]",
		driverapi.Result{Code: driverapi.NotFound, Message: "gone"}.ErrorText(), "ErrorText of a hand-built result")
	require.Equal(t, "as sent", driverapi.Result{Code: driverapi.NotFound, Message: "gone", Text: "as sent"}.ErrorText())
	require.Empty(t, driverapi.Result{}.ErrorText())

	undecodable := driverapi.Result{Code: driverapi.Unknown, Undecodable: true, Message: "EOF"}.Err()
	require.EqualError(t, undecodable, "EOF")
	require.False(t, errors.As(undecodable, &se))

	// Undecodable wins even over a Code of OK: the call did fail.
	require.EqualError(t, driverapi.Result{Undecodable: true, Message: "x"}.Err(), "x")

	// Err and ResultOf round-trip.
	for _, r := range []driverapi.Result{
		{Method: driverapi.MethodGetStatus},
		{Method: driverapi.MethodGetStatus, Code: driverapi.Uninitialized, Message: "init [again]",
			Text: "machine codes error: code = [Uninitialized] message = [init [again]]"},
		{Method: driverapi.MethodGetStatus, Code: driverapi.Unknown, Undecodable: true, Message: "boom", Text: "boom"},
	} {
		require.Equal(t, r, driverapi.ResultOf(r.Method, r.Err()))
	}
}
