/** pg's helpers module (pg 8): `prepareValue` maps a parameter as pg's `Query` binds it. */
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue: (value: unknown) => unknown };
  export default utils;
}
