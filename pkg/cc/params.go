// SPDX-License-Identifier: Apache-2.0

package cc

import "github.com/mptcp-cc/mptcp-cc/pkg/ccparams"

// ParamInput is the parameters as a user gives them (ccparams.Input).
type ParamInput = ccparams.Input

// ParamError is a parameter ParseParams refuses (ccparams.Error).
type ParamError = ccparams.Error

// ParseParams checks parameters and fills in the defaults: ccparams.Parse,
// the rules load's flags, the daemon's configuration and the scenarios share.
func ParseParams(in ParamInput) (Params, error) { return ccparams.Parse(in) }
