import * as t from 'io-ts';
import { type ConfigKey, configTypes } from '../api/config-def.js';
import type { ConfigImportance, ConfigKeyReport, ConfigWidth, KeyPresentation } from '../runtime/connector-config.js';
import type { ConfigValidation } from '../runtime/herder.js';
import { HIDDEN, maskUrlPasswords } from '../runtime/secret-masking.js';

/** Kafka Connect's ConfigKeyInfo: one key's declaration. */
export interface ConfigKeyInfoJson {
  readonly name: string;
  readonly type: string;
  readonly required: boolean;
  readonly default_value: string | null;
  readonly importance: ConfigImportance;
  readonly documentation: string;
  readonly group: string | null;
  readonly width: ConfigWidth;
  readonly display_name: string;
  readonly dependents: readonly string[];
  /** Kafka Connect's name: the key's position in its group, from 1. */
  readonly order_in_group: number;
}

/** Kafka Connect's ConfigValueInfo: one key's value and errors. */
export interface ConfigValueInfoJson {
  readonly name: string;
  readonly value: string | null;
  readonly recommended_values: readonly string[];
  readonly errors: readonly string[];
  readonly visible: boolean;
}

/** Kafka Connect's ConfigInfos, the answer of `PUT /connector-plugins/{plugin}/config/validate`. */
export interface ConfigInfosJson {
  readonly name: string;
  readonly error_count: number;
  readonly groups: readonly string[];
  readonly configs: ReadonlyArray<{ readonly definition: ConfigKeyInfoJson | null; readonly value: ConfigValueInfoJson }>;
}

/**
 * The validation result in Kafka Connect's shape; secret values and URL passwords are shown as
 * `[hidden]`. `name` is the `connector.class` as given (else the plugin of the URL); the
 * framework keys carry Kafka Connect's groups, `order_in_group`, width, display name and
 * importance; the connector's own keys are in group `Connector`, numbered from 1.
 */
export function configInfosJson(v: ConfigValidation): ConfigInfosJson {
  const groups = [...new Set(v.keys.map((k) => k.group).filter((g): g is NonNullable<typeof g> => g !== undefined))];
  let connectorOrder = 0;
  return {
    name: v.connectorClass,
    error_count: v.errorCount,
    groups,
    configs: v.keys.map((k) => {
      let definition: ConfigKeyInfoJson | null = null;
      if (k.definition) {
        const order = k.presentation?.order ?? ++connectorOrder;
        definition = configKeyInfoJson(k.name, k.definition, k.group ?? null, k.defaultValue, order, k.secret, k.presentation);
      } else if (k.warnings.length > 0) {
        // A key nothing declares: say so where a client shows a key's documentation.
        definition = { ...configKeyInfoJson(k.name, unknownKey(k.warnings), null, '', 0), importance: 'LOW' };
      }
      return { definition, value: configValueInfoJson(k) };
    }),
  };
}

function unknownKey(warnings: readonly string[]): ConfigKey<unknown> {
  return { type: configTypes.string as t.Type<unknown, unknown, unknown>, default: '', description: warnings.join('; ') };
}

/**
 * Kafka Connect's ConfigKeyInfo of one declared key. A key declared without a default is
 * required (a `default: undefined` is optional, with `default_value` null). Without a
 * `presentation` (a connector's own key), a required key is HIGH importance, others MEDIUM,
 * the width NONE and the display name the key.
 */
export function configKeyInfoJson(
  name: string,
  key: ConfigKey<unknown>,
  group: string | null,
  defaultValue: unknown,
  order: number,
  secret = key.password === true,
  presentation?: KeyPresentation,
): ConfigKeyInfoJson {
  const required = !('default' in key);
  const noDefault = required || defaultValue === undefined || defaultValue === null;
  return {
    name,
    type: secret ? 'PASSWORD' : (presentation?.type ?? connectType(key.type)),
    required,
    default_value: noDefault ? null : secret && defaultValue !== '' ? HIDDEN : asString(defaultValue),
    importance: presentation?.importance ?? (required ? 'HIGH' : 'MEDIUM'),
    documentation: key.description,
    group,
    width: presentation?.width ?? 'NONE',
    display_name: presentation?.displayName ?? name,
    dependents: [],
    order_in_group: order,
  };
}

function configValueInfoJson(k: ConfigKeyReport): ConfigValueInfoJson {
  const value = k.value === undefined || k.value === null ? null : k.secret ? HIDDEN : maskUrlPasswords(asString(k.value));
  return {
    name: k.name,
    value,
    // A framework key lists what Kafka Connect lists (its converters); a connector's own, its oneOf values.
    recommended_values: k.presentation ? (k.presentation.recommended ?? []) : k.definition ? recommended(k.definition.type) : [],
    errors: k.errors.map(maskUrlPasswords),
    visible: true,
  };
}

/** Kafka Connect's type name of an io-ts config type. */
function connectType(type: t.Type<unknown, unknown, unknown>): string {
  const ints: unknown[] = [configTypes.int, configTypes.nonNegativeInt, configTypes.positiveInt, t.Int];
  if (ints.includes(type)) return 'INT';
  if (type === configTypes.boolean || type === t.boolean) return 'BOOLEAN';
  if (type === configTypes.list) return 'LIST';
  if (type === t.number) return 'DOUBLE';
  return 'STRING';
}

function recommended(type: t.Type<unknown, unknown, unknown>): string[] {
  return type instanceof t.KeyofType ? Object.keys(type.keys as Record<string, unknown>) : [];
}

function asString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(String).join(',');
  if (typeof v === 'object' && v !== null) return JSON.stringify(v);
  return String(v);
}
