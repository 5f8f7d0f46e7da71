import { Link } from '../router';

export function NotFoundPage() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        Nothing lives at this address. Go to the <Link to="/review">review queue</Link>.
      </p>
    </section>
  );
}
