import type { SyncWindowCalendarView, SyncWindowView } from '@flotilla/contract';
import { useQueries } from '@tanstack/react-query';
import { useState } from 'react';
import { get } from '../api.js';
import { ErrorNote, Field } from '../parts.js';

const DAYS = 7;
const HOUR_MS = 3_600_000;
const VIEWER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

const dayKey = (zone: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
const dayLabel = (zone: string) =>
  new Intl.DateTimeFormat(undefined, { timeZone: zone, weekday: 'short', month: 'short', day: 'numeric' });
const clock = (zone: string) =>
  new Intl.DateTimeFormat(undefined, {
    timeZone: zone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  });

/**
 * The local days of the range in `zone`, found by stepping an hour at a time: a day is 23 or 25
 * hours long across a daylight-saving change, so fixed 24-hour steps could skip or repeat one.
 */
function localDays(from: number, zone: string): { key: string; label: string }[] {
  const key = dayKey(zone);
  const label = dayLabel(zone);
  const out: { key: string; label: string }[] = [];
  for (let t = from; out.length < DAYS; t += HOUR_MS) {
    const k = key.format(t);
    if (out.at(-1)?.key !== k) out.push({ key: k, label: label.format(t) });
  }
  return out;
}

/**
 * A week of windows: each cell lists the spans that start on that day, in the zone chosen — the
 * window's own (how its schedule reads) or the viewer's. The spans come from the hub, computed by
 * the evaluation the agents use, so the calendar shows what will happen, DST changes included.
 */
export function WindowCalendar({ windows }: { windows: SyncWindowView[] }) {
  // The windows' own zones (how their schedules read) and the viewer's; one for the whole table.
  const zones = [...new Set([...windows.map((w) => w.timeZone), VIEWER_ZONE])];
  const [chosen, setChosen] = useState<string | null>(null);
  const zone = chosen ?? zones[0] ?? 'UTC';
  const [from] = useState(() => Date.now());
  const calendars = useQueries({
    queries: windows.map((w) => ({
      queryKey: ['windows', 'calendar', w.name, w.version, from],
      queryFn: () =>
        get<SyncWindowCalendarView>(`/api/v1/windows/${encodeURIComponent(w.name)}/calendar`, {
          from: new Date(from).toISOString(),
          days: DAYS,
        }),
    })),
  });
  const days = localDays(from, zone);
  const key = dayKey(zone);
  const time = clock(zone);
  return (
    <>
      <Field label="Show times in">
        {(id) => (
          <select id={id} value={zone} onChange={(e) => setChosen(e.target.value)}>
            {zones.map((z) => (
              <option key={z} value={z}>
                {z}
                {z === VIEWER_ZONE ? ' (yours)' : ''}
                {windows.some((w) => w.timeZone === z) ? ' (a window’s own)' : ''}
              </option>
            ))}
          </select>
        )}
      </Field>
      <div className="table-wrap">
        <table className="calendar" data-testid="window-calendar">
          <caption>
            When each window is active over the next {DAYS} days, times in {zone}
          </caption>
          <thead>
            <tr>
              <th scope="col">Window</th>
              {days.map((d) => (
                <th scope="col" key={d.key}>
                  {d.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {windows.map((w, i) => {
              const cal = calendars[i];
              return (
                <tr key={w.name}>
                  <th scope="row">
                    {w.name} <span className={`status ${w.kind === 'deny' ? 'bad' : 'ok'}`}>{w.kind}</span>
                    <ErrorNote error={cal?.error} />
                  </th>
                  {days.map((d) => (
                    <td key={d.key}>
                      {(cal?.data?.intervals ?? [])
                        .filter((iv) => key.format(new Date(iv.start)) === d.key)
                        .map((iv) => {
                          const crosses = key.format(new Date(iv.end)) !== d.key;
                          return (
                            <span className={`span ${w.kind}`} key={iv.start}>
                              {time.format(new Date(iv.start))}–{time.format(new Date(iv.end))}
                              {crosses ? ' (next day)' : ''}
                            </span>
                          );
                        })}
                    </td>
                  ))}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}
