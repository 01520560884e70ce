# -*- coding: utf-8 -*-
# The JSON schema below is data from F5 Networks' k8s-bigip-ctlr (Container Ingress Services),
# schemas/bigip-virtual-server_v0.1.7.json at commit 2097c7bce151e834fd598d7fa6164e3816942b7f,
# Copyright F5 Networks, Inc., licensed under the Apache License, Version 2.0
# (LICENSES/Apache-2.0.txt, https://www.apache.org/licenses/LICENSE-2.0); it is reproduced
# unmodified as a string.
# The surrounding Python is k8snet.triage's:
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The CIS ConfigMap schema ``f5schemadb://bigip-virtual-server_v0.1.7.json``, shipped as a Python
module so that AnsiballZ carries it with the module utilities that use it (a plain .json file next
to module_utils would not be sent to the host)."""

from __future__ import annotations

import json

SCHEMA_URI = "f5schemadb://bigip-virtual-server_v0.1.7.json"

SCHEMA_JSON = r"""
{
  "$schema": "http://json-schema/org/schema#",
  "id": "f5schemadb://bigip-virtual-server_v0.1.7.json",

  "type": "object",

  "definitions": {
    "backendType": {
      "type": "object",
      "properties": {
        "healthMonitors": {
          "type": "array",
          "items": { "$ref": "#/definitions/healthMonitorType" }
        },
        "serviceName": { "type": "string", "minLength": 1 },
        "servicePort": { "$ref": "#/definitions/portType" }
      },
      "additionalProperties": false,
      "required": [ "serviceName", "servicePort" ]
    },
    "frontendIAppType": {
      "type": "object",
      "properties": {
        "iapp": { "type": "string", "minLength": 1 },
        "iappOptions": {
          "type": "object",
          "patternProperties": {
            "^[a-zA-Z0-9_-]+$": { "type": "string", "minLength": 1 }
          },
          "additionalProperties": false
        },
        "iappPoolMemberTable": {
          "type": "object",
          "properties": {
            "name": { "type": "string", "minLength": 1 },
            "columns": {
              "type": "array",
              "items": {
                "oneOf": [
                  { "$ref": "#/definitions/iappAddressType" },
                  { "$ref": "#/definitions/iappPortType" },
                  { "$ref": "#/definitions/iappValueType" }
                ]
              }
            }
          },
          "additionalProperties": false,
          "required": [ "name", "columns" ]
        },
        "iappTables": {
          "type": "object",
          "patternProperties": {
            "^[a-zA-Z0-9_-]+$": { "$ref": "#/definitions/iappTableType" }
          },
          "additionalProperties": false
        },
        "iappVariables": {
          "type": "object",
          "patternProperties": {
            "^[a-zA-Z0-9_-]+$": { "type": "string", "minLength": 1 }
          },
          "additionalProperties": false
        },
        "partition": { "type": "string", "minLength": 1 }
      },
      "additionalProperties": false,
      "required": [ "partition", "iapp", "iappOptions", "iappVariables",
                    "iappPoolMemberTable" ]
    },
    "frontendVSType": {
      "type": "object",
      "properties": {
        "balance": { "type": "string", "minLength": 1},
        "partition": { "type": "string", "minLength": 1 },
        "mode": { "type": "string", "enum": [ "http", "tcp", "udp" ] },
        "sslProfile": { "$ref": "#/definitions/sslProfileType" },
        "virtualAddress": { "$ref": "#/definitions/virtualAddressType" }
      },
      "additionalProperties": false,
      "required": [ "partition" ]
    },
    "healthMonitorType": {
      "type": "object",
      "properties": {
        "interval": { "type": "integer", "minimum": 1, "maximum": 86400 },
        "protocol": { "type": "string", "enum": [ "http", "tcp", "udp" ] },
        "send": { "type": "string", "minLength": 1 },
        "recv": { "type": "string", "minLength": 1 },
        "timeout": { "type": "integer", "minimum": 1, "maximum": 86400 }
      },
      "additionalProperties": false,
      "required": [ "protocol" ]
    },
    "iappAddressType": {
      "type": "object",
      "properties": {
        "name": { "type": "string", "minLength": 1 },
        "kind": { "type": "string", "enum": [ "IPAddress" ] }
      },
      "additionalProperties": false,
      "required": [ "name", "kind" ]
    },
    "iappPortType": {
      "type": "object",
      "properties": {
        "name": { "type": "string", "minLength": 1 },
        "kind": { "type": "string", "enum": [ "Port" ] }
      },
      "additionalProperties": false,
      "required": [ "name", "kind" ]
    },
    "iappValueType": {
      "type": "object",
      "properties": {
        "name": { "type": "string", "minLength": 1 },
        "value": { "type": "string", "minLength": 1 }
      },
      "additionalProperties": false,
      "required": [ "name", "value" ]
    },
    "iappTableType": {
      "type": "object",
      "properties": {
        "columns": {
          "type": "array",
          "minItems": 1,
          "items": { "type": "string", "minLength": 1 }
        },
        "rows": {
          "type": "array",
          "items": { "type": "array", "items": { "type": "string" }}
        }
      },
      "additionalProperties": false,
      "required": [ "columns", "rows" ]
    },
    "portType": { "type": "integer", "minimum": 1, "maximum": 65535 },
    "sslProfileType": {
      "type": "object",
      "oneOf": [
        {
          "properties": {
            "f5ProfileNames": {
              "type": "array",
              "items": {
                "type": "string",
                "minLength": 1
              }
            }
          },
          "required": [ "f5ProfileNames" ]
        }, {
          "properties": {
            "f5ProfileName": {
              "type": "string",
              "minLength": 1
            }
          },
          "additionalProperties": false
        }
      ]
    },
    "virtualAddressType": {
      "type": "object",
      "properties": {
        "bindAddr": {
          "anyOf": [ { "format": "bigipv4" }, { "format": "bigipv6" } ]
        },
        "port": { "$ref": "#/definitions/portType" }
      },
      "additionalProperties": false,
      "required": [ "port" ]
    }
  },

  "properties": {
    "virtualServer": {
      "type": "object",
      "properties": {
        "backend": { "$ref": "#/definitions/backendType" },
        "frontend": {
          "oneOf": [
            { "$ref": "#/definitions/frontendIAppType" },
            { "$ref": "#/definitions/frontendVSType" }
          ]
        }
      },
      "additionalProperties": false,
      "required": [ "backend", "frontend" ]
    }
  },
  "additionalProperties": false,
  "required": [ "virtualServer" ]
}
"""

SCHEMA = json.loads(SCHEMA_JSON)
