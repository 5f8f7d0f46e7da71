import { useCallback, useEffect, useState } from 'react';
import { api, type ApiError, errorOf, type Schemas } from '../api/client';
import { LoadState } from '../load-state';

/** Each service of the platform and whether it answers the gateway now (`GET /system/services`). */
export function ServicesPage() {
  const [services, setServices] = useState<Schemas['ServiceStatusDto'][] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const load = useCallback(async () => {
    const answer = await api.GET('/system/services');
    if (answer.data) {
      setServices(answer.data.services);
      setError(null);
    } else setError(errorOf(answer.response, answer.error));
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  return (
    <section aria-labelledby="services-title">
      <div className="page-head">
        <h1 id="services-title">Services</h1>
        <button type="button" onClick={() => void load()}>
          Check again
        </button>
      </div>
      <LoadState loading={services === null} error={error} />
      {services ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Service</th>
              <th scope="col">Status</th>
              <th scope="col">Answered in</th>
            </tr>
          </thead>
          <tbody>
            {services.map((s) => (
              <tr key={s.service}>
                <td>{s.service}</td>
                <td>
                  <span className={`status ${s.status === 'up' ? 'status-active' : 'status-paused'}`}>{s.status}</span>
                  {s.error ? ` ${s.error}` : ''}
                </td>
                <td>{s.latency_ms === undefined ? '—' : `${s.latency_ms} ms`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
