//! Connecting: to an account with a key or with Entra ID, or to the embedded store, whose
//! database is opened and loaded into its emulator first. What is reached is put together by
//! `Store::on`, beside the containers' list, so that connecting never names a container.

#[cfg(feature = "embedded")]
use std::sync::Arc;

use azure_data_cosmos::CosmosError;

#[cfg(feature = "embedded")]
use super::super::embedded;
#[cfg(feature = "embedded")]
use super::super::embedded::Durability;
use super::super::error::StoreError;
use super::super::open_error::OpenError;
#[cfg(feature = "embedded")]
use super::super::schema::Container;
use super::super::sdk::{create_containers, entra_client, entra_credential, key_client};
use super::Store;
use crate::config::{Backend, Config};

impl Store {
    /// Connects to the backend `config` names, creating the database and containers first when
    /// `config.create_containers` is set (always, on the embedded store).
    pub async fn connect(config: &Config) -> Result<Store, OpenError> {
        let other = |error: CosmosError| {
            StoreError::sdk("cannot start the embedded store's emulator", error)
        };
        let mut credential_for_scripts = None;
        let client = match &config.backend {
            #[cfg(feature = "embedded")]
            Backend::Embedded { data_dir } => {
                return Self::connect_embedded(
                    config,
                    data_dir,
                    embedded::database::Opening::Serve,
                    Arc::new(embedded::database::NoFaults),
                    Default::default(),
                )
                .await;
            }
            #[cfg(not(feature = "embedded"))]
            Backend::Embedded { .. } => return Err(OpenError::NoEmbeddedStore),
            Backend::ConnectionString(text) => key_client(text).await.map_err(other)?,
            Backend::Endpoint { endpoint, client_id } => {
                let credential = entra_credential(client_id.as_deref())?;
                credential_for_scripts = Some(credential.clone());
                entra_client(endpoint, credential).await?
            }
        };
        if config.create_containers {
            create_containers(&client, &config.database).await?;
        }
        Ok(Self::on(&client, config, credential_for_scripts).await?)
    }

    /// [`Store::connect`] on the embedded store, with faults injected into its commits (`disk`)
    /// and between the SDK and its emulator (`sdk`).
    #[cfg(feature = "test-support")]
    pub(crate) async fn connect_with(
        config: &Config,
        disk: Arc<dyn embedded::database::Faults>,
        sdk: embedded::emulator::SdkFaults,
    ) -> Result<Store, OpenError> {
        match &config.backend {
            Backend::Embedded { data_dir } => {
                Self::connect_embedded(
                    config,
                    data_dir,
                    embedded::database::Opening::Serve,
                    disk,
                    sdk,
                )
                .await
            }
            _ => Err(StoreError::NotEmbedded { what: "injecting faults" }.into()),
        }
    }

    /// [`Store::connect`] for `handler import`: the embedded store opens while an import it
    /// records as writing has not finished ([`OpenError::ImportUnfinished`]), which the import
    /// finishes.
    pub(crate) async fn connect_for_import(config: &Config) -> Result<Store, OpenError> {
        match &config.backend {
            #[cfg(feature = "embedded")]
            Backend::Embedded { data_dir } => {
                let (opening, disk) =
                    (embedded::database::Opening::Import, Arc::new(embedded::database::NoFaults));
                Self::connect_embedded(config, data_dir, opening, disk, Default::default()).await
            }
            _ => Self::connect(config).await,
        }
    }

    /// The embedded store in `data_dir` for a repair that has made its rows whole
    /// ([`crate::cosmos::repair_rows`]): opened as [`Store::connect`] does, but while the repair is
    /// marked unfinished, which refuses any other start.
    #[cfg(feature = "embedded")]
    pub(crate) async fn connect_for_repair(
        config: &Config,
        data_dir: &std::path::Path,
    ) -> Result<Store, OpenError> {
        let (opening, disk) =
            (embedded::database::Opening::Repair, Arc::new(embedded::database::NoFaults));
        Self::connect_embedded(config, data_dir, opening, disk, Default::default()).await
    }

    /// The embedded store whose data is in `data_dir`. Its database is opened, the emulator
    /// loaded from it (with the containers, created always), and every write from here on
    /// committed to it, through `disk`. The SDK reaches the emulator through `sdk` (the tests'
    /// faults).
    #[cfg(feature = "embedded")]
    async fn connect_embedded(
        config: &Config,
        data_dir: &std::path::Path,
        opening: embedded::database::Opening,
        disk: Arc<dyn embedded::database::Faults>,
        sdk: embedded::emulator::SdkFaults,
    ) -> Result<Store, OpenError> {
        let other = |error: CosmosError| {
            StoreError::sdk("cannot start the embedded store's emulator", error)
        };
        let (database, connection) = embedded::open(data_dir, opening)?;
        let (client, own, emulator) = embedded::emulator::client(sdk).await.map_err(other)?;
        embedded::emulator::create_containers(&emulator, &own, &config.database)
            .await
            .map_err(other)?;
        let (changes, expiries, connection) =
            embedded::emulator::load(&emulator, &config.database, &database, connection).await?;
        // The load read every row: what it counted must be what the commits recorded.
        database.check_loaded(&connection)?;
        let store = Self::on(&client, config, None).await?;
        let own = Self::on(&own, config, None).await?;
        let containers = Container::ALL
            .into_iter()
            .map(|container| (container, own.container(container).clone()))
            .collect();
        let batch_requests = embedded::emulator::BatchRequests {
            container: client
                .database_client(&config.database)
                .container_client(embedded::emulator::BATCHES, None)
                .await
                .map_err(other)?,
            arrivals: emulator.1,
        };
        let durability = Durability::start(
            database,
            connection,
            disk,
            changes,
            expiries,
            containers,
            batch_requests,
        )?;
        Ok(Store { durability: Some(Arc::new(durability)), ..store })
    }
}
